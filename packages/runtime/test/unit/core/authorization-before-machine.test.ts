/**
 * Issue 12, item 2: everything that can be decided without the machine is
 * decided first. A call that is not listed, over budget, tripped or denied
 * on its lexical path makes no driver call at all (no resume, no unpause, no
 * exec); an allowed call wakes the machine as an audited step of itself, and
 * a path that resolves elsewhere in the sandbox is authorized again.
 */
import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, symlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { coreFixture, type CoreFixture } from '../../support/core-fixture.js';
import type { SandboxDriver } from '../../../src/core/sandbox-driver.js';

/** Counts every driver method call made after `watch()` starts. */
function watchDriver(driver: SandboxDriver): { calls: string[]; stop(): void } {
  const calls: string[] = [];
  const originals = new Map<string, unknown>();
  const target = driver as unknown as Record<string, unknown>;
  for (const name of [
    'start',
    'restore',
    'checkpoint',
    'pause',
    'unpause',
    'exec',
    'runOnce',
    'destroy',
    'status',
    'usage',
    'resize',
    'connect',
    'personalize',
    'list',
  ]) {
    const original = target[name];
    if (typeof original !== 'function') continue;
    originals.set(name, original);
    target[name] = (...args: unknown[]) => {
      calls.push(name);
      return (original as (...a: unknown[]) => unknown).apply(driver, args);
    };
  }
  return {
    calls,
    stop() {
      for (const [name, original] of originals) target[name] = original;
    },
  };
}

/** Plants a symlink at `path` on the session's disk (what the fake driver's sandboxes see), its parents made. */
async function plant(fx: CoreFixture, sessionId: string, path: string, target: string): Promise<void> {
  const disk = await fx.disks.ensureMounted(sessionId);
  await mkdir(dirname(join(disk, path)), { recursive: true });
  await mkdir(join(disk, target), { recursive: true });
  await symlink(target, join(disk, path));
}

describe('authorization before the machine', () => {
  let fx: CoreFixture;
  beforeEach(() => {
    fx = coreFixture();
  });
  afterEach(() => fx.close());

  for (const depth of ['suspended', 'paused'] as const) {
    it(`makes no driver call for denied, unlisted, over-budget and tripped calls on a ${depth} session`, async () => {
      const session = await fx.sessions.create({
        contract: fx.contract({ tools: ['exec', 'files.read', 'files.write'], filesystem: { denyWrite: ['/etc'] }, budgets: { maxToolCalls: 1 } }),
      });
      if (depth === 'suspended') await fx.sessions.suspend(session.id);
      else await fx.sessions.pause(session.id);
      await fx.core.usage.drain();
      fx.authorizer.decide = (context) => (context.path === '/etc/passwd' || context.programs.includes('rm') ? 'deny' : 'allow');
      const watched = watchDriver(fx.driver);
      try {
        const denied = await fx.pipeline.submit(session.id, 'files.write', { path: '/etc/passwd', content: 'x' });
        assert.equal(denied.status === 'refused' && denied.error.code, 'POLICY_DENIED');
        const deniedExec = await fx.pipeline.submit(session.id, 'exec', { command: 'rm -rf /workspace' });
        assert.equal(deniedExec.status === 'refused' && deniedExec.error.code, 'POLICY_DENIED');
        const unlisted = await fx.pipeline.submit(session.id, 'files.remove', { path: '/workspace/a' });
        assert.equal(unlisted.status === 'refused' && unlisted.error.code, 'POLICY_DENIED');
        assert.deepEqual(unlisted.status === 'refused' && unlisted.decision?.policyIds, ['contract.tools']);
        assert.deepEqual(watched.calls, [], 'no driver call before a decision allowed one');
        // The one call of the budget wakes the machine; the next is over budget and touches nothing.
        assert.equal((await fx.pipeline.submit(session.id, 'exec', { argv: ['true'] })).status, 'completed');
        await fx.core.usage.drain();
        const woken = watched.calls.length;
        assert.ok(woken > 0);
        if (depth === 'suspended') await fx.sessions.suspend(session.id);
        else await fx.sessions.pause(session.id);
        await fx.core.usage.drain();
        const slept = watched.calls.length;
        const over = await fx.pipeline.submit(session.id, 'exec', { argv: ['true'] });
        assert.equal(over.status === 'refused' && over.error.code, 'BUDGET_EXCEEDED');
        assert.equal(watched.calls.length, slept, 'an over-budget call makes no driver call');
        assert.equal((await fx.sessions.get(session.id)).state, depth);
      } finally {
        watched.stop();
      }
    });
  }

  it('audits the wake as a step of the allowed call that needed it', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    await fx.sessions.suspend(session.id);
    // path resolution answers the path it was given (the file scripts take it second to last)
    fx.driver.handler = (argv) => ({ stdout: argv.at(-2) ?? '' });
    const outcome = await fx.pipeline.submit(session.id, 'files.write', { path: '/workspace/a.txt', content: 'x' });
    assert.equal(outcome.status, 'completed');
    const records = await fx.store.listAudit(session.id);
    const authorized = records.findLast((record) => record.type === 'tool-call.authorized');
    const resumed = records.findLast((record) => record.type === 'session.resumed');
    const started = records.findLast((record) => record.type === 'tool-call.started');
    const completed = records.findLast((record) => record.type === 'tool-call.completed');
    assert.ok(authorized && resumed && started && completed);
    assert.ok(authorized.seq < started.seq && started.seq < resumed.seq && resumed.seq < completed.seq, 'decision, start, then the wake, then the result');
    assert.equal(resumed.data['wokenBy'], 'call');
    assert.equal(resumed.data['gen_ai.tool.call.id'], outcome.callId);
  });

  it('authorizes again a path that resolves elsewhere in the sandbox, and gives its reservation back when denied', async () => {
    const session = await fx.sessions.create({ contract: fx.contract({ budgets: { maxToolCalls: 3 } }) });
    // A planted symlink: the sandbox resolves /workspace/link/passwd to /etc/passwd.
    await plant(fx, session.id, '/workspace/link', '/etc');
    fx.authorizer.decide = (context) => (context.path.startsWith('/etc') ? 'deny' : 'allow');
    const outcome = await fx.pipeline.submit(session.id, 'files.write', { path: '/workspace/link/passwd', content: 'x' });
    assert.equal(outcome.status === 'refused' && outcome.error.code, 'POLICY_DENIED');
    const seen = fx.authorizer.seen.map((context) => context.path);
    assert.deepEqual(seen.slice(-2), ['/workspace/link/passwd', '/etc/passwd'], 'the lexical path first, then the resolved one');
    const denied = (await fx.store.listAudit(session.id)).findLast((record) => record.type === 'tool-call.denied');
    assert.equal(denied?.data['stage'], 'resolved-path');
    assert.equal((await fx.sessions.get(session.id)).meters.toolCalls, 0, 'nothing ran: the reservation went back');
  });

  it('does not let an approval of one path cover the path it resolves to', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    await plant(fx, session.id, '/workspace/out', '/workspace/elsewhere');
    fx.authorizer.decide = () => 'ask';
    const held = await fx.pipeline.submit(session.id, 'files.write', { path: '/workspace/out/report', content: 'x' });
    assert.equal(held.status, 'pending-approval');
    await fx.approvals.decide(held.status === 'pending-approval' ? held.approvalId : '', 'approve', 'tester', null);
    await fx.approvals.drain();
    const outcome = await fx.approvals.waitForOutcome(held.status === 'pending-approval' ? held.approvalId : '', 1000);
    assert.equal(outcome.status === 'refused' && outcome.error.code, 'POLICY_DENIED');
    assert.match(outcome.status === 'refused' ? outcome.error.message : '', /resolves to \/workspace\/elsewhere\/report/);
  });
});
