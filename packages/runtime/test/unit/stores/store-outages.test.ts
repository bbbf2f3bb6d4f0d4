/**
 * Issue 26, item 3, in the small: what a database that does not answer turns
 * into (STORE_UNAVAILABLE, saying to retry; anything else left as it is), an
 * outage told once, the pacing of background work that fails, and an idle
 * check whose store is down that backs off instead of rejecting.
 */
import { after, afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isConnectionLost, storeError } from '../../../src/stores/postgres/postgres-errors.js';
import { AirlockError, isAirlockError } from '../../../src/core/errors.js';
import { Backoff, OutageReports, outageOf } from '../../../src/core/outage-reports.js';
import { IdleSleeper } from '../../../src/core/idle-sleeper.js';
import { coreFixture, type CoreFixture } from '../../support/core-fixture.js';

// Any promise rejected unhandled while these tests run fails them.
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
process.on('unhandledRejection', onUnhandled);
after(() => {
  process.off('unhandledRejection', onUnhandled);
  assert.deepEqual(unhandled, [], 'no promise rejected unhandled');
});

const withCode = (code: string, message = `failed with ${code}`) => Object.assign(new Error(message), { code });

describe('PostgreSQL connection errors', () => {
  const lost = [
    withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'),
    withCode('ECONNRESET', 'read ECONNRESET'),
    withCode('57P01', 'terminating connection due to administrator command'),
    withCode('57P03', 'the database system is shutting down'),
    withCode('57P02', 'terminating connection because of crash of another server process'),
    withCode('08006', 'connection failure'),
    new Error('Connection terminated unexpectedly'),
    new Error('Connection terminated due to connection timeout'),
    new Error('timeout exceeded when trying to connect'),
    new Error('Client has encountered a connection error and is not queryable'),
    Object.assign(new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')], 'connect failed'), {}),
  ];
  for (const error of lost) {
    it(`${(error as { code?: string }).code ?? error.message} is STORE_UNAVAILABLE (503) and says to retry`, () => {
      assert.ok(isConnectionLost(error));
      const mapped = storeError(error);
      assert.ok(isAirlockError(mapped, 'STORE_UNAVAILABLE'), String(mapped));
      assert.equal(mapped.status, 503);
      assert.match(mapped.message, /PostgreSQL store is unavailable/);
      assert.match(mapped.message, /retry/);
      assert.equal(mapped.cause, error, 'the cause is kept for the log');
    });
  }

  it('anything else is left as it is: a constraint, a missing table, a serialization failure, a plain bug', () => {
    for (const error of [
      withCode('23505'),
      withCode('42P01'),
      withCode('40001'),
      new TypeError('x is undefined'),
      new AirlockError('WRITE_CONFLICT', 'changed'),
    ]) {
      assert.equal(isConnectionLost(error), false, String(error));
      assert.equal(storeError(error), error);
    }
    assert.equal(storeError(undefined), undefined);
  });
});

describe('OutageReports', () => {
  it('tells an outage once when it starts and once when it ends; other failures every time', () => {
    const told: string[] = [];
    let now = 1000;
    const outages = new OutageReports(
      { down: (code, what) => told.push(`down ${code} ${what}`), up: (code, ms) => told.push(`up ${code} ${ms}`) },
      (what) => told.push(`failed ${what}`),
      () => now,
    );
    const down = new AirlockError('STORE_UNAVAILABLE', 'the PostgreSQL store is unavailable; retry');
    outages.report('the idle check', down);
    outages.report('the idle check', down);
    outages.report('snapshot retention sweep', down);
    outages.report('an audit', new Error('disk full'));
    assert.equal(outages.isDown('STORE_UNAVAILABLE'), true);
    now = 21_000;
    outages.recovered('STORE_UNAVAILABLE');
    outages.recovered('STORE_UNAVAILABLE');
    outages.report('the idle check', down);
    assert.deepEqual(told, ['down STORE_UNAVAILABLE the idle check', 'failed an audit', 'up STORE_UNAVAILABLE 20000', 'down STORE_UNAVAILABLE the idle check']);
    assert.equal(outageOf(new AirlockError('OBJECT_STORAGE_UNAVAILABLE', 'x')), 'OBJECT_STORAGE_UNAVAILABLE');
    assert.equal(outageOf(new Error('x')), undefined);
  });
});

describe('Backoff', () => {
  it('waits double after each failure, up to the most, and a success ends the wait', () => {
    const backoff = new Backoff(1000, 4000);
    assert.equal(backoff.waiting(0), false);
    backoff.failed(0);
    assert.equal(backoff.waiting(999), true);
    assert.equal(backoff.waiting(1000), false);
    backoff.failed(1000);
    assert.equal(backoff.waiting(2999), true);
    assert.equal(backoff.waiting(3000), false);
    for (let i = 0; i < 50; i += 1) backoff.failed(0);
    assert.equal(backoff.waiting(3999), true);
    assert.equal(backoff.waiting(4000), false, 'never longer than the most');
    backoff.succeeded();
    assert.equal(backoff.waiting(0), false);
  });
});

describe('IdleSleeper while the store is down', () => {
  let fx: CoreFixture;
  let sleeper: IdleSleeper | undefined;
  beforeEach(() => {
    fx = coreFixture();
  });
  afterEach(async () => {
    await sleeper?.stop();
    await fx.close();
  });

  it('a pass that fails is told and backs off, never rejects, and the passes resume once the store answers', async () => {
    const list = fx.sessions.records.list.bind(fx.sessions.records);
    let down = true;
    let listed = 0;
    fx.sessions.records.list = async (query) => {
      listed += 1;
      if (down) throw new AirlockError('STORE_UNAVAILABLE', 'the PostgreSQL store is unavailable (connect ECONNREFUSED); retry once the database is back');
      return list(query);
    };
    let offsetMs = 0;
    const failures: unknown[] = [];
    sleeper = new IdleSleeper(fx.sessions, { tickMs: 5, clock: { now: () => new Date(Date.now() + offsetMs) }, onTickError: (error) => failures.push(error) });
    sleeper.start();
    const deadline = Date.now() + 15_000;
    while (failures.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(failures.length, 1, 'one failure, then the passes wait (a second, doubling) instead of one every 5 ms');
    assert.ok(isAirlockError(failures[0], 'STORE_UNAVAILABLE'));
    assert.equal(listed, 1);
    down = false;
    offsetMs = 60_000;
    while (listed < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.ok(listed >= 3, 'the passes resumed once the store answered');
    assert.equal(failures.length, 1);
  });
});

describe('a pause the store could not record', () => {
  let fx: CoreFixture;
  beforeEach(() => {
    fx = coreFixture();
  });
  afterEach(async () => {
    await fx.close();
  });

  it('unpauses the machine again: it never stays frozen under a record that says it runs', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    const sandboxId = session.sandbox?.sandboxId ?? '';
    assert.equal(fx.driver.sandboxes.get(sandboxId), 'running');
    const transition = fx.sessions.records.transition.bind(fx.sessions.records);
    fx.sessions.records.transition = (async (...args: Parameters<typeof transition>) => {
      if (args[1] === 'pause') throw new AirlockError('STORE_UNAVAILABLE', 'the PostgreSQL store is unavailable; retry');
      return transition(...args);
    }) as typeof transition;
    await fx.core.usage.drain();
    await assert.rejects(
      fx.sessions.sleepIfIdle(session.id, 'paused', () => true),
      (error: unknown) => isAirlockError(error, 'STORE_UNAVAILABLE'),
    );
    assert.equal(fx.driver.sandboxes.get(sandboxId), 'running');
    assert.equal((await fx.sessions.get(session.id)).state, 'running');
  });
});
