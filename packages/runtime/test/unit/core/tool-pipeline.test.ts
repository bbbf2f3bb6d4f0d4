import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { coreFixture, type CoreFixture } from '../../support/core-fixture.js';

describe('ToolPipeline', () => {
  let fx: CoreFixture;
  beforeEach(() => {
    fx = coreFixture();
  });
  afterEach(() => fx.close());

  it('never reaches the driver with a denied call, and audits the decision before any effect', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    fx.authorizer.decide = (context) => (context.programs.includes('rm') ? 'deny' : 'allow');
    const before = fx.driver.execs.length;
    const outcome = await fx.pipeline.submit(session.id, 'exec', { command: 'ls && rm -rf /workspace' });
    assert.equal(outcome.status, 'refused');
    assert.equal(outcome.status === 'refused' && outcome.error.code, 'POLICY_DENIED');
    assert.equal(fx.driver.execs.length, before, 'the driver saw nothing');
    const types = (await fx.store.listAudit(session.id)).map((r) => r.type);
    assert.equal(types.at(-1), 'tool-call.denied');
  });

  it('writes the authorization record before the started record and the completion after', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    const outcome = await fx.pipeline.submit(session.id, 'exec', { argv: ['echo', 'x'] });
    assert.equal(outcome.status, 'completed');
    const types = (await fx.store.listAudit(session.id)).map((r) => r.type).slice(-3);
    assert.deepEqual(types, ['tool-call.authorized', 'tool-call.started', 'tool-call.completed']);
  });

  it('rejects arguments of the wrong shape naming the field, and runs nothing', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    const before = fx.driver.execs.length;
    await assert.rejects(fx.pipeline.submit(session.id, 'exec', { argv: 'ls' }), (error: { code: string; details: { field: string } }) => {
      assert.equal(error.code, 'INVALID_ARGUMENTS');
      assert.equal(error.details.field, 'argv');
      return true;
    });
    await assert.rejects(fx.pipeline.submit(session.id, 'files.write', { path: '/x', content: 1 }), { code: 'INVALID_ARGUMENTS' });
    await assert.rejects(fx.pipeline.submit(session.id, 'exec', { command: 'ls', argv: ['ls'] }), { code: 'INVALID_ARGUMENTS' });
    await assert.rejects(fx.pipeline.submit(session.id, 'nope', {}), { code: 'INVALID_ARGUMENTS' });
    assert.equal(fx.driver.execs.length, before);
  });

  it('holds an ask for a human; an approved call runs exactly once, a denied one never', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    fx.authorizer.decide = (context) => (context.programs.includes('tar') ? 'ask' : 'allow');
    const held = await fx.pipeline.submit(session.id, 'exec', { argv: ['tar', 'cf', 'a.tar', '.'] });
    assert.equal(held.status, 'pending-approval');
    const approvalId = held.status === 'pending-approval' ? held.approvalId : '';
    const tarRuns = () => fx.driver.execs.filter((e) => e.argv[0] === 'tar').length;
    assert.equal(tarRuns(), 0);
    await fx.approvals.decide(approvalId, 'approve', 'tester', 'looks fine');
    await fx.approvals.drain();
    assert.equal(tarRuns(), 1);
    await assert.rejects(fx.approvals.decide(approvalId, 'approve', 'tester', null), { code: 'APPROVAL_ALREADY_DECIDED' });
    await fx.approvals.drain();
    assert.equal(tarRuns(), 1, 'approved exactly once');
    const outcome = await fx.approvals.waitForOutcome(approvalId, 1000);
    assert.equal(outcome.status, 'completed');

    const second = await fx.pipeline.submit(session.id, 'exec', { argv: ['tar', 'xf', 'a.tar'] });
    const secondId = second.status === 'pending-approval' ? second.approvalId : '';
    await fx.approvals.decide(secondId, 'deny', 'tester', 'no');
    await fx.approvals.drain();
    assert.equal(tarRuns(), 1, 'the denied call never ran');
    const denied = await fx.approvals.waitForOutcome(secondId, 1000);
    assert.equal(denied.status === 'refused' && denied.error.code, 'APPROVAL_DENIED');
  });

  it('trips the runaway breaker after N identical failures until a human resets it', async () => {
    const session = await fx.sessions.create({ contract: fx.contract({ guard: { maxIdenticalFailures: 3 } }) });
    fx.driver.handler = () => ({ exitCode: 1, stderr: 'fail' });
    for (let i = 0; i < 3; i += 1) {
      const outcome = await fx.pipeline.submit(session.id, 'exec', { argv: ['false'] });
      assert.equal(outcome.status, 'completed');
    }
    const blocked = await fx.pipeline.submit(session.id, 'exec', { argv: ['echo', 'other'] });
    assert.equal(blocked.status === 'refused' && blocked.error.code, 'RUNAWAY_DETECTED');
    await fx.sessions.resetGuard(session.id, 'tester');
    fx.driver.handler = () => ({ exitCode: 0 });
    assert.equal((await fx.pipeline.submit(session.id, 'exec', { argv: ['echo', 'other'] })).status, 'completed');
  });

  it('enforces the tool-call budget', async () => {
    const session = await fx.sessions.create({ contract: fx.contract({ budgets: { maxToolCalls: 2 } }) });
    await fx.pipeline.submit(session.id, 'exec', { argv: ['true'] });
    await fx.pipeline.submit(session.id, 'exec', { argv: ['true'] });
    const third = await fx.pipeline.submit(session.id, 'exec', { argv: ['true'] });
    assert.equal(third.status === 'refused' && third.error.code, 'BUDGET_EXCEEDED');
  });

  it('fails closed when the authorizer throws', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    fx.authorizer.decide = () => {
      throw new Error('boom');
    };
    const outcome = await fx.pipeline.submit(session.id, 'exec', { argv: ['true'] });
    assert.equal(outcome.status === 'refused' && outcome.error.code, 'POLICY_DENIED');
  });

  it('does not run a call whose audit record cannot be written', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    const before = fx.driver.execs.length;
    const transaction = fx.store.transaction.bind(fx.store);
    fx.store.transaction = () => Promise.reject(new Error('SQLITE_FULL'));
    await assert.rejects(fx.pipeline.submit(session.id, 'exec', { argv: ['true'] }), { code: 'AUDIT_UNAVAILABLE' });
    fx.store.transaction = transaction;
    assert.equal(fx.driver.execs.length, before);
  });
  describe('snapshot and fork as tools', () => {
    it('snapshots the session through the airlock: authorized, audited, listed', async () => {
      const session = await fx.sessions.create({ contract: fx.contract() });
      const outcome = await fx.pipeline.submit(session.id, 'snapshot', { name: 'before-migration' });
      assert.equal(outcome.status, 'completed');
      const result = outcome.status === 'completed' ? outcome.result : {};
      assert.equal(result['name'], 'before-migration');
      assert.deepEqual(result['contents'], ['memory', 'disk']);
      assert.deepEqual((await fx.snapshots.list({ sessionId: session.id })).map((snapshot) => snapshot.id), [result['id']]);
      assert.equal(fx.authorizer.seen.at(-1)?.tool, 'snapshot');
      const types = (await fx.store.listAudit(session.id)).map((record) => record.type);
      assert.ok(types.indexOf('tool-call.authorized') < types.indexOf('tool-call.completed'), types.join(','));
    });

    it('forks into count branches; the policy sees how many', async () => {
      const session = await fx.sessions.create({ contract: fx.contract() });
      const outcome = await fx.pipeline.submit(session.id, 'fork', { count: 2 });
      assert.equal(outcome.status, 'completed');
      const result = outcome.status === 'completed' ? outcome.result : {};
      const branches = result['branches'] as { index: number; sessionId: string; state: string }[];
      assert.deepEqual(branches.map((branch) => branch.index), [0, 1]);
      for (const branch of branches) assert.equal((await fx.sessions.get(branch.sessionId)).lineage?.parentSessionId, session.id);
      assert.equal(result['created'], 2);
      assert.equal(result['failed'], 0);
      assert.equal(fx.authorizer.seen.at(-1)?.branches, 2);
    });

    it('never forks when the policy denies it, and holds a fork for a human on ask', async () => {
      const session = await fx.sessions.create({ contract: fx.contract() });
      fx.authorizer.decide = (context) => (context.tool !== 'fork' ? 'allow' : context.branches > 2 ? 'deny' : 'ask');
      const sessionsBefore = (await fx.store.listSessions()).length;
      const denied = await fx.pipeline.submit(session.id, 'fork', { count: 3 });
      assert.equal(denied.status === 'refused' && denied.error.code, 'POLICY_DENIED');
      const held = await fx.pipeline.submit(session.id, 'fork', { count: 1 });
      assert.equal(held.status, 'pending-approval');
      assert.equal((await fx.store.listSessions()).length, sessionsBefore, 'nothing forked before a human decided');
      await fx.approvals.decide(held.status === 'pending-approval' ? held.approvalId : '', 'approve', 'tester', null);
      await fx.approvals.drain();
      assert.equal((await fx.store.listSessions()).length, sessionsBefore + 1);
    });

    it('rejects a fork count that is not a positive whole number, naming the field', async () => {
      const session = await fx.sessions.create({ contract: fx.contract() });
      for (const count of [0, 1.5, '2']) {
        await assert.rejects(fx.pipeline.submit(session.id, 'fork', { count }), (error: { code: string; details: { field: string } }) => {
          assert.equal(error.code, 'INVALID_ARGUMENTS');
          assert.equal(error.details.field, 'count');
          return true;
        });
      }
      await assert.rejects(fx.pipeline.submit(session.id, 'snapshot', { label: 'x' }), { code: 'INVALID_ARGUMENTS' });
    });
  });
});
