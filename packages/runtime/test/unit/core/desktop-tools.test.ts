/**
 * The desktop tools through the pipeline, with the fake driver standing in
 * for xdotool and xwd: what the policy sees, what runs (and what does not),
 * the thumbnails the audit keeps, approvals on a window that changed, and the
 * wait while a person holds the desktop. The real display: cli e2e desktop.
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { coreFixture, type CoreFixture } from '../../support/core-fixture.js';
import { decodePng } from '../../../src/core/screen-image.js';
import type { SessionRecord } from '../../../src/core/session.js';
import { xwdDump } from './screen-fixtures.js';

describe('desktop tools in the pipeline (fake driver)', () => {
  let fx: CoreFixture;
  let session: SessionRecord;
  let title: string;
  let displayMissing: boolean;

  beforeEach(async () => {
    fx = coreFixture();
    title = 'Start - Chromium';
    displayMissing = false;
    fx.driver.handler = (argv) => {
      if (displayMissing && argv[0]?.startsWith('/usr/bin/')) return { exitCode: 127, stderr: 'exec: "/usr/bin/xdotool": executable file not found in $PATH' };
      if (argv[0] === '/usr/bin/xwd') return { stdout: xwdDump(64, 40, (x) => (x < 32 ? [255, 0, 0] : [0, 0, 255])) };
      if (argv[0] === '/usr/bin/xdotool' && argv[1] === 'getactivewindow') return { stdout: `${title}\n` };
      if (argv[0] === '/usr/bin/xdotool') return { stdout: 'X=10\nY=20\nSCREEN=0\nWINDOW=1\n' };
      return { stdout: argv.at(-1) ?? '' };
    };
    session = await fx.sessions.create({ contract: fx.contract({ desktop: { width: 320, height: 200 } }) });
  });
  afterEach(() => fx.close());

  const actions = () => fx.driver.execs.filter((exec) => exec.argv[0] === '/usr/bin/xdotool' && exec.argv[1] !== 'getactivewindow');
  const auditOf = async (type: string) => (await fx.store.listAudit(session.id)).filter((record) => record.type === type);

  it('gives the policy the action, its point and the focused window, keeps a thumbnail, and runs the click', async () => {
    const outcome = await fx.pipeline.submit(session.id, 'desktop.act', { action: 'click', x: 10, y: 20 });
    assert.equal(outcome.status, 'completed');
    const seen = fx.authorizer.seen.at(-1);
    assert.deepEqual(seen?.desktop, { action: 'click', x: 10, y: 20, toX: 0, toY: 0, text: '', windowTitle: 'Start - Chromium' });
    const ran = actions();
    assert.equal(ran.length, 1);
    assert.deepEqual(ran[0]?.argv.slice(1, 4), ['mousemove', '10', '20']);
    assert.ok(ran[0]?.argv.includes('click'));
    assert.deepEqual(outcome.status === 'completed' && outcome.result['pointer'], { x: 10, y: 20 });

    const decided = (await auditOf('tool-call.authorized')).at(-1);
    const thumbnail = decided?.data['thumbnail'] as { name: string; sha256: string; width: number; height: number };
    assert.equal(thumbnail.name, outcome.callId);
    const png = fx.thumbnails.files.get(`${session.id}/${outcome.callId}`);
    assert.ok(png);
    assert.equal(createHash('sha256').update(png).digest('hex'), thumbnail.sha256);
    const pixels = decodePng(png);
    assert.deepEqual([pixels.width, pixels.height], [64, 40], 'a small screen is kept at its size');
    assert.deepEqual([...pixels.rgb.subarray(0, 3)], [255, 0, 0]);
  });

  it('keeps typed text out of the audit but gives it to the policy', async () => {
    const outcome = await fx.pipeline.submit(session.id, 'desktop.act', { action: 'type', text: 'hunter2' });
    assert.equal(outcome.status, 'completed');
    assert.equal(fx.authorizer.seen.at(-1)?.desktop.text, 'hunter2');
    assert.deepEqual(actions()[0]?.argv.slice(-2), ['--', 'hunter2']);
    for (const record of await fx.store.listAudit(session.id)) assert.ok(!JSON.stringify(record.data).includes('hunter2'), `${record.type} holds the typed text`);
    const args = (await auditOf('tool-call.authorized')).at(-1)?.data['arguments'] as Record<string, unknown>;
    assert.equal(args['textCharacters'], 7);
  });

  it('refuses an off-screen point or a malformed action before anything runs', async () => {
    await assert.rejects(fx.pipeline.submit(session.id, 'desktop.act', { action: 'click', x: 320, y: 5 }), (error: { code: string; message: string }) => {
      assert.equal(error.code, 'INVALID_ARGUMENTS');
      assert.match(error.message, /off the screen, which is 320×200/);
      return true;
    });
    for (const bad of [{ action: 'teleport', x: 1, y: 1 }, { action: 'click', x: 1 }, { action: 'click', x: 1, y: 1, z: 3 }, { action: 'key', keys: 'ctrl+l; rm' }, { action: 'scroll', x: 1, y: 1 }]) {
      await assert.rejects(fx.pipeline.submit(session.id, 'desktop.act', bad), { code: 'INVALID_ARGUMENTS' }, JSON.stringify(bad));
    }
    assert.equal(fx.driver.execs.filter((exec) => exec.argv[0]?.startsWith('/usr/bin/')).length, 0, 'nothing ran in the machine');
    assert.equal((await auditOf('tool-call.rejected')).length, 6);
  });

  it('runs nothing when the policy denies the action', async () => {
    fx.authorizer.decide = (context) => (context.desktop.action === 'type' && context.desktop.windowTitle.includes('Start') ? 'deny' : 'allow');
    const outcome = await fx.pipeline.submit(session.id, 'desktop.act', { action: 'type', text: 'secret' });
    assert.equal(outcome.status, 'refused');
    assert.equal(actions().length, 0);
  });

  it('runs an approved action only on the window that was approved', async () => {
    fx.authorizer.decide = (context) => (context.desktop.action === 'click' ? 'ask' : 'allow');
    const held = await fx.pipeline.submit(session.id, 'desktop.act', { action: 'click', x: 1, y: 1 });
    assert.equal(held.status, 'pending-approval');
    await fx.approvals.decide(held.status === 'pending-approval' ? held.approvalId : '', 'approve', 'tester', null);
    const done = await fx.approvals.waitForOutcome(held.status === 'pending-approval' ? held.approvalId : '', 5_000);
    assert.equal(done.status, 'completed');
    assert.equal(actions().length, 1);

    const second = await fx.pipeline.submit(session.id, 'desktop.act', { action: 'click', x: 2, y: 2 });
    title = 'Bank - Confirm transfer';
    const approvalId = second.status === 'pending-approval' ? second.approvalId : '';
    await fx.approvals.decide(approvalId, 'approve', 'tester', null);
    const refused = await fx.approvals.waitForOutcome(approvalId, 5_000);
    assert.equal(refused.status, 'refused');
    assert.equal(refused.status === 'refused' && refused.error.code, 'SCREEN_CHANGED');
    assert.equal(actions().length, 1, 'the click on the other window did not run');
  });

  it('makes actions wait while a person holds the desktop, records the takeover, and runs them once handed back', async () => {
    const takeover = await fx.desktop.takeovers.begin(session.id, 'person');
    const waiting = fx.pipeline.submit(session.id, 'desktop.act', { action: 'move', x: 3, y: 4 });
    await waitFor(async () => (await auditOf('tool-call.waiting')).length === 1);
    assert.equal((await auditOf('tool-call.waiting'))[0]?.data['reason'], 'TAKEOVER');
    assert.equal(actions().filter((exec) => exec.argv.includes('mousemove')).length, 0, 'the action waits');
    fx.desktop.takeovers.recordInput(session.id, { kind: 'pointer', x: 5, y: 6, buttons: 1 });
    await waitFor(() => takeover.frames.length >= 2);
    const ended = await fx.desktop.takeovers.end(session.id);
    const outcome = await waiting;
    assert.equal(outcome.status, 'completed');
    assert.ok(outcome.status === 'completed' && Number(outcome.result['takeoverWaitMs']) > 0);
    assert.equal(ended.inputEvents.length, 1);
    assert.ok(fx.thumbnails.files.has(`${session.id}/${ended.frames[0]?.name}`));
    assert.equal((await auditOf('desktop.takeover-ended'))[0]?.data['recording'], `/v1/sessions/${session.id}/desktop/takeovers/${takeover.id}`);
    assert.throws(() => fx.desktop.takeovers.get(session.id, 'tko_none'), { code: 'NOT_FOUND' });
  });

  it('closes a live view when a suspend needs the machine, instead of waiting for the viewer to leave', async () => {
    const stream = new PassThrough();
    fx.driver.connectHandler = (_sandboxId, port) => {
      assert.equal(port, 5900);
      return stream;
    };
    let viewing!: Promise<void>;
    const watched = new Promise<void>((resolve) => {
      viewing = fx.desktop.withDisplayStream(session.id, async (display) => {
        resolve();
        await new Promise((closed) => display.once('close', closed));
      });
    });
    await watched;
    assert.equal(fx.sessions.locks.inFlight(session.id), 1, 'the viewer holds the shared lock');
    const suspended = await fx.sessions.suspend(session.id);
    assert.equal(suspended.state, 'suspended');
    assert.equal(stream.destroyed, true);
    await viewing;
  });

  it('answers a screenshot with the screen as PNG', async () => {
    const outcome = await fx.pipeline.submit(session.id, 'desktop.screenshot', {});
    assert.equal(outcome.status, 'completed');
    const result = outcome.status === 'completed' ? outcome.result : {};
    const pixels = decodePng(Buffer.from(String(result['png']), 'base64'));
    assert.deepEqual([pixels.width, pixels.height], [64, 40]);
    assert.deepEqual([...pixels.rgb.subarray(63 * 3, 64 * 3)], [0, 0, 255]);
    assert.equal(fx.authorizer.seen.at(-1)?.desktop.action, 'screenshot');
    assert.equal(fx.driver.execs.filter((exec) => exec.argv[0] === '/usr/bin/xwd').length, 1, 'the screen read for the decision is the one returned');
    const completed = (await auditOf('tool-call.completed')).at(-1);
    assert.equal(completed?.data['png'], undefined, 'the audit keeps the digest, not the image');
    assert.equal(completed?.data['sha256'], result['sha256']);
  });

  it('refuses a screenshot the policy denies, and a held one looks at the screen again once approved', async () => {
    fx.authorizer.decide = () => 'deny';
    assert.equal((await fx.pipeline.submit(session.id, 'desktop.screenshot', {})).status, 'refused');
    fx.authorizer.decide = () => 'ask';
    const held = await fx.pipeline.submit(session.id, 'desktop.screenshot', {});
    assert.equal(held.status, 'pending-approval');
    const approvalId = held.status === 'pending-approval' ? held.approvalId : '';
    await fx.approvals.decide(approvalId, 'approve', 'tester', null);
    const done = await fx.approvals.waitForOutcome(approvalId, 5_000);
    assert.equal(done.status, 'completed');
    // A call denied on what is known without the machine never looks at the screen; a held one
    // looks once for the person who decides, and again when released.
    assert.equal(fx.driver.execs.filter((exec) => exec.argv[0] === '/usr/bin/xwd').length, 2, 'held, and again when released; never for the denied one');
  });

  it('says how to get a desktop when the image has none', async () => {
    displayMissing = true;
    await assert.rejects(fx.pipeline.submit(session.id, 'desktop.screenshot', {}), (error: { code: string; message: string }) => {
      assert.equal(error.code, 'DESKTOP_UNAVAILABLE');
      assert.match(error.message, /--image debian-bookworm-desktop/);
      return true;
    });
  });
});

async function waitFor(condition: () => boolean | Promise<boolean>): Promise<void> {
  for (let attempt = 0; attempt < 500 && !(await condition()); attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(await condition(), 'condition never held');
}
