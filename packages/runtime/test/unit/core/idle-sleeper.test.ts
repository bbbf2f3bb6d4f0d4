import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { coreFixture, type CoreFixture } from '../../support/core-fixture.js';
import { IdleSleeper, idlePolicyOf, setKeepAwake } from '../../../src/core/idle-sleeper.js';
import type { SessionRecord } from '../../../src/core/session.js';
import { FakeDriver } from '../../../src/drivers/fake/fake-driver.js';

/** A promise with its resolver, to hold a fake driver call open. */
function deferred(): { promise: Promise<void>; release: () => void } {
  let release = () => undefined as void;
  const promise = new Promise<void>((resolve) => (release = resolve));
  return { promise, release };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Makes every checkpoint of the fake driver wait until `release`; counts those that began. */
function holdCheckpoints(fx: CoreFixture): { release: () => void; checkpoints: () => number } {
  const hold = deferred();
  const checkpoint = fx.driver.checkpoint.bind(fx.driver);
  let begun = 0;
  fx.driver.checkpoint = async (handle, dir, options) => {
    begun += 1;
    await hold.promise;
    return checkpoint(handle, dir, options);
  };
  return { release: hold.release, checkpoints: () => begun };
}

describe('IdleSleeper', () => {
  let fx: CoreFixture;
  let offsetMs: number;
  let sleeper: IdleSleeper;
  const errors: unknown[] = [];
  beforeEach(() => {
    fx = coreFixture();
    offsetMs = 0;
    errors.length = 0;
    // The sleeper's clock runs ahead by offsetMs: "time passes" without waiting.
    sleeper = new IdleSleeper(fx.sessions, { clock: { now: () => new Date(Date.now() + offsetMs) }, onError: (_id, error) => errors.push(error) });
  });
  afterEach(async () => {
    await sleeper.stop();
    await fx.close();
  });

  const idleFor = (seconds: number) => (offsetMs = seconds * 1000);
  const create = (idle: Record<string, unknown> = {}) => fx.sessions.create({ contract: fx.contract({ idle: { suspendAfterSeconds: 8, ...idle } }) });
  // Samples taken after a call hold the session's lock for a moment: a tick waits until they are done.
  const idleTick = async () => {
    await fx.core.usage.drain();
    await sleeper.tick();
  };
  const types = async (id: string) => (await fx.store.listAudit(id)).map((record) => record.type);

  it('pauses after a quarter of the suspend timeout by default, suspends after it, and the next call wakes it from each depth', async () => {
    const session = await create();
    assert.deepEqual(idlePolicyOf(session), { pauseAfterSeconds: 2, suspendAfterSeconds: 8, keepAwake: false });
    idleFor(1);
    await idleTick();
    assert.equal((await fx.sessions.get(session.id)).state, 'running', 'not idle long enough for anything');
    idleFor(3);
    await idleTick();
    assert.equal((await fx.sessions.get(session.id)).state, 'paused');
    const fromPause = await fx.pipeline.submit(session.id, 'exec', { argv: ['echo', 'hi'] });
    assert.equal(fromPause.status, 'completed');
    assert.equal((await fx.sessions.get(session.id)).state, 'running');
    assert.ok((await types(session.id)).includes('session.unpaused'));

    idleFor(9);
    await idleTick();
    const suspended = await fx.sessions.get(session.id);
    assert.equal(suspended.state, 'suspended');
    assert.equal(suspended.sandbox, null);
    const restore = fx.driver.restore.bind(fx.driver);
    fx.driver.restore = async (spec) => {
      await new Promise((resolve) => setTimeout(resolve, 30));
      return restore(spec);
    };
    const fromSuspend = await fx.pipeline.submit(session.id, 'exec', { argv: ['echo', 'hi'] });
    assert.equal(fromSuspend.status, 'completed');
    assert.ok(fromSuspend.status === 'completed' && fromSuspend.timing.resumeMs >= 25, 'the caller sees the wake-up in timing.resumeMs');
    const audit = await fx.store.listAudit(session.id);
    const paused = audit.find((record) => record.type === 'session.paused');
    const slept = audit.find((record) => record.type === 'session.suspended');
    assert.equal(paused?.data['reason'], 'idle');
    assert.equal(slept?.data['reason'], 'idle');
  });

  it('goes straight from running to suspended when the idle time already passed both timeouts', async () => {
    const session = await create({ pauseAfterSeconds: 2 });
    idleFor(60);
    await idleTick();
    assert.equal((await fx.sessions.get(session.id)).state, 'suspended');
  });

  it('charges paused and suspended time apart from running time', async () => {
    const session = await create();
    idleFor(3);
    await idleTick();
    idleFor(9);
    await idleTick();
    await fx.sessions.resume(session.id);
    const meters = (await fx.sessions.get(session.id)).meters;
    assert.ok(meters.runningSeconds >= 0 && meters.pausedSeconds >= 0 && meters.suspendedSeconds >= 0);
    const audit = (await types(session.id)).filter((type) => ['session.paused', 'session.suspended', 'session.resumed'].includes(type));
    assert.deepEqual(audit, ['session.paused', 'session.suspended', 'session.resumed']);
  });

  it('leaves a machine alone while the contract or the run-time flag says keepAwake, and never touches per-call sessions', async () => {
    const contractAwake = await create({ keepAwake: true });
    const flagged = await create();
    await setKeepAwake(fx.sessions, flagged.id, true);
    const perCall = await fx.sessions.create({ contract: fx.contract({ idle: { suspendAfterSeconds: 8 } }), mode: 'per-call' });
    idleFor(3600);
    await idleTick();
    assert.equal((await fx.sessions.get(contractAwake.id)).state, 'running');
    assert.equal((await fx.sessions.get(flagged.id)).state, 'running');
    assert.equal((await fx.sessions.get(perCall.id)).state, 'running');
    assert.ok((await types(flagged.id)).includes('session.keep-awake-changed'));
    await setKeepAwake(fx.sessions, flagged.id, false);
    await idleTick();
    assert.equal((await fx.sessions.get(flagged.id)).state, 'suspended', 'it sleeps again once the flag is off');
    assert.equal((await setKeepAwake(fx.sessions, flagged.id, true)).state, 'running', 'turning it on wakes the machine');
    await assert.rejects(setKeepAwake(fx.sessions, perCall.id, true), { code: 'INVALID_STATE' });
  });

  it('never puts a machine to sleep under a call in flight, and counts idleness from the end of the call', async () => {
    const session = await create();
    const hold = deferred();
    const exec = fx.driver.exec.bind(fx.driver);
    fx.driver.exec = async (handle, request) => {
      await hold.promise;
      return exec(handle, request);
    };
    const call = fx.pipeline.submit(session.id, 'exec', { argv: ['sleep', '100'] });
    await tick();
    idleFor(3600);
    await idleTick();
    assert.equal((await fx.sessions.get(session.id)).state, 'running', 'a long call is not idleness');
    offsetMs = 0;
    hold.release();
    assert.equal((await call).status, 'completed');
    idleFor(1);
    await idleTick();
    assert.equal((await fx.sessions.get(session.id)).state, 'running', 'idle time starts when the call ended');
  });

  it('cancels a sleep when a call slipped in between the idle check and the lock', async () => {
    const session = await create();
    await makeIdleSince(fx, session, 3600);
    const hold = deferred();
    const exec = fx.driver.exec.bind(fx.driver);
    fx.driver.exec = async (handle, request) => {
      await hold.promise;
      return exec(handle, request);
    };
    const call = fx.pipeline.submit(session.id, 'exec', { argv: ['true'] });
    await tick();
    // What the sleeper does after its (now stale) check: wait for the lock, then ask again.
    const sleep = fx.sessions.sleepIfIdle(session.id, 'suspended', (fresh) => Date.now() - Date.parse(fresh.lastActivityAt) > 60_000);
    hold.release();
    assert.equal((await call).status, 'completed');
    assert.equal(await sleep, undefined, 'the sleep was cancelled');
    assert.equal((await fx.sessions.get(session.id)).state, 'running');
  });

  it('serializes an idle suspend with calls that arrive during it: no lost call, exactly one resume', async () => {
    const session = await create();
    await makeIdleSince(fx, session, 3600);
    const hold = holdCheckpoints(fx);
    // create looked for on-start hooks with one exec
    const execsBefore = fx.driver.execs.length;
    const sleeping = sleeper.tick();
    await waitFor(() => hold.checkpoints() === 1);
    const calls = [1, 2, 3].map((n) => fx.pipeline.submit(session.id, 'exec', { argv: ['echo', String(n)] }));
    await tick();
    assert.equal(fx.driver.execs.length, execsBefore, 'the calls wait for the suspend');
    await new Promise((resolve) => setTimeout(resolve, 40));
    hold.release();
    await sleeping;
    const outcomes = await Promise.all(calls);
    assert.deepEqual(outcomes.map((outcome) => outcome.status), ['completed', 'completed', 'completed']);
    for (const outcome of outcomes) {
      assert.ok(outcome.status === 'completed' && outcome.timing.resumeMs >= 35, 'the wait for the suspend in progress counts as wake-up time');
    }
    const echoes = fx.driver.execs.filter((exec) => exec.argv[0] === 'echo');
    assert.equal(echoes.length, 3, 'every call ran');
    const after = await fx.sessions.get(session.id);
    assert.equal(after.state, 'running');
    assert.equal(after.generation, 2, 'one restore');
    assert.equal((await types(session.id)).filter((type) => type === 'session.resumed').length, 1, 'exactly one resume');
    assert.ok(echoes.every((exec) => exec.sandboxId === after.sandbox?.sandboxId), 'all ran on the restored machine');
  });

  it('makes an ephemeral call wait for a suspend in progress, then run over the finished disk', async () => {
    const session = await create();
    const hold = holdCheckpoints(fx);
    const statesSeen: string[] = [];
    let suspendDone = false;
    fx.driver.handler = (argv) => {
      statesSeen.push(suspendDone ? 'after the suspend' : 'during the suspend');
      return { stdout: argv.at(-1) ?? '' };
    };
    const suspending = fx.sessions.suspend(session.id).then((record) => {
      suspendDone = true;
      return record;
    });
    await waitFor(() => hold.checkpoints() === 1);
    const call = fx.pipeline.submit(session.id, 'exec', { argv: ['cat', '/workspace/f'], ephemeral: true });
    await tick();
    assert.deepEqual(statesSeen, [], 'the ephemeral call did not start during the suspend');
    hold.release();
    await suspending;
    const outcome = await call;
    assert.equal(outcome.status, 'completed');
    assert.deepEqual(statesSeen, ['after the suspend'], 'it ran once the suspend had finished, without waking the machine');
    assert.equal((await fx.sessions.get(session.id)).state, 'suspended');
  });

  it('reports a failed sleep and leaves the session alone for a while instead of retrying every tick', async () => {
    const session = await create();
    fx.driver.pause = async () => {
      throw new Error('pause failed');
    };
    idleFor(3);
    await idleTick();
    await idleTick();
    assert.equal(errors.length, 1);
    assert.equal((await fx.sessions.get(session.id)).state, 'running');
  });
});

/** Backdates a session's activity (and state change), as if it had been idle for `seconds`. */
async function makeIdleSince(fx: CoreFixture, session: SessionRecord, seconds: number): Promise<void> {
  const past = new Date(Date.now() - seconds * 1000).toISOString();
  await fx.forceRecord(session.id, { lastActivityAt: past, stateSince: past });
}

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 2));
  assert.ok(condition(), 'condition never became true');
}

describe('IdleSleeper and driver capabilities', () => {
  it('never pauses a machine whose driver cannot pause, and never suspends one that cannot snapshot', async () => {
    const fx = coreFixture({
      extraDrivers: [new FakeDriver({ name: 'no-pause', capabilities: { pause: false } }), new FakeDriver({ name: 'no-snapshot', capabilities: { snapshot: false, fork: false } })],
    });
    let offsetMs = 0;
    const sleeper = new IdleSleeper(fx.sessions, { clock: { now: () => new Date(Date.now() + offsetMs) } });
    try {
      const contract = fx.contract({ idle: { suspendAfterSeconds: 8 } });
      const noPause = await fx.sessions.create({ contract, sandbox: 'no-pause' });
      const noSnapshot = await fx.sessions.create({ contract, sandbox: 'no-snapshot' });
      assert.equal(noPause.driver, 'no-pause');
      assert.equal(noPause.sandbox?.driver, 'no-pause', 'the handle names the driver that made it');
      offsetMs = 3_000;
      await sleeper.tick();
      assert.equal((await fx.sessions.get(noPause.id)).state, 'running', 'paused although its driver cannot pause');
      assert.equal((await fx.sessions.get(noSnapshot.id)).state, 'paused');
      offsetMs = 9_000;
      await sleeper.tick();
      assert.equal((await fx.sessions.get(noPause.id)).state, 'suspended', 'it can still be suspended');
      assert.equal((await fx.sessions.get(noSnapshot.id)).state, 'paused', 'suspended although its driver cannot snapshot');
      await assert.rejects(fx.sessions.resume(noPause.id).then(() => fx.sessions.pause(noPause.id)), { code: 'INVALID_STATE' });
      await assert.rejects(fx.sessions.suspend(noSnapshot.id), { code: 'INVALID_STATE' });
      await assert.rejects(fx.forks.fork({ sessionId: noSnapshot.id }, 1), { code: 'INVALID_STATE' });
    } finally {
      await sleeper.stop();
      await fx.close();
    }
  });

  it('records the driver a session asked for, refuses an unknown one and a contract that disagrees', async () => {
    const fx = coreFixture({ extraDrivers: [new FakeDriver({ name: 'microvm' })] });
    try {
      assert.equal((await fx.sessions.create({ contract: fx.contract() })).driver, 'fake', 'the first driver is the default');
      assert.equal((await fx.sessions.create({ contract: fx.contract({ sandbox: 'microvm' }) })).driver, 'microvm');
      const before = (await fx.sessions.list()).length;
      await assert.rejects(fx.sessions.create({ contract: fx.contract(), sandbox: 'nope' }), (error: Error & { code?: string }) => error.code === 'INVALID_ARGUMENTS' && /fake, microvm/.test(error.message));
      await assert.rejects(fx.sessions.create({ contract: fx.contract({ sandbox: 'microvm' }), sandbox: 'fake' }), { code: 'INVALID_ARGUMENTS' });
      assert.equal((await fx.sessions.list()).length, before, 'a refused create left a session');
      const created = (await fx.store.listAudit((await fx.sessions.list())[1]?.id ?? '')).find((record) => record.type === 'session.created');
      assert.equal(created?.data['sandbox'], 'microvm');
    } finally {
      await fx.close();
    }
  });
});
