/**
 * The one owner of session state: transitions follow the table and are
 * checked against the stored record (not the caller's copy), `update` can
 * never move the state, and a write from a stale version is a conflict that
 * is retried, never a lost update.
 */
import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { coreFixture, type CoreFixture } from '../../support/core-fixture.js';
import { SESSION_TRANSITIONS, assertTransition, canTransition, type SessionOperation } from '../../../src/core/session-transitions.js';
import { SessionRecords } from '../../../src/core/session-records.js';
import { systemClock } from '../../../src/core/clock.js';
import type { SessionState } from '../../../src/core/session.js';
import type { Store } from '../../../src/core/store.js';

describe('session state has one owner', () => {
  let fx: CoreFixture;
  beforeEach(() => {
    fx = coreFixture();
  });
  afterEach(() => fx.close());

  it('allows each operation only from the states and pending operation of its row in the table', () => {
    const states: SessionState[] = ['creating', 'running', 'paused', 'suspended', 'terminated', 'failed'];
    for (const [operation, rule] of Object.entries(SESSION_TRANSITIONS) as [SessionOperation, (typeof SESSION_TRANSITIONS)[SessionOperation]][]) {
      for (const state of states) {
        const pending = rule.pending === 'any' || rule.pending === 'none' ? null : rule.pending;
        assert.equal(canTransition({ state, pendingOperation: pending }, operation), rule.from.includes(state), `${operation} from ${state}`);
      }
    }
    assert.throws(() => assertTransition({ id: 's', state: 'running', pendingOperation: 'suspend' }, 'pause'), { code: 'SESSION_BUSY' });
    assert.throws(() => assertTransition({ id: 's', state: 'running', pendingOperation: null }, 'finish-suspend'), { code: 'INVALID_STATE' });
    assert.throws(() => assertTransition({ id: 's', state: 'terminated', pendingOperation: null }, 'fail'), { code: 'INVALID_STATE' });
  });

  it('checks a transition against the stored record, not the caller’s copy', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    await fx.records.transition(session.id, 'pause', { type: 'session.paused', data: {} });
    // `session` still says running; the store says paused.
    await assert.rejects(fx.records.transition(session.id, 'pause', { type: 'session.paused', data: {} }), { code: 'INVALID_STATE' });
    const unpaused = await fx.records.transition(session.id, 'unpause', { type: 'session.unpaused', data: {} });
    assert.equal(unpaused.state, 'running');
    assert.equal(unpaused.version, session.version + 2);
  });

  it('never moves the state through update, whatever the change object holds', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    const sneaky = { keepAwake: true, state: 'terminated', pendingOperation: 'terminate' } as unknown as Parameters<Parameters<SessionRecords['update']>[1]>[0];
    const updated = await fx.records.update(session.id, () => sneaky);
    assert.equal(updated.state, 'running');
    assert.equal(updated.pendingOperation, null);
    assert.equal(updated.keepAwake, true);
  });

  it('retries a write that lost its compare-and-set, and surfaces the conflict when it keeps losing', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    // A store whose row lock hands out a stale version, as a writer that skipped the lock would see.
    let stale = 2;
    let attempts = 0;
    const racing: Store = Object.create(fx.store) as Store;
    racing.transaction = (work) =>
      fx.store.transaction((tx) => {
        attempts += 1;
        const lockSession = tx.lockSession.bind(tx);
        return work(
          Object.assign(Object.create(tx) as typeof tx, {
            lockSession: async (id: string) => {
              const fresh = await lockSession(id);
              if (!fresh || stale <= 0) return fresh;
              stale -= 1;
              return { ...fresh, version: fresh.version - 1 };
            },
          }),
        );
      });
    const records = new SessionRecords({ store: racing, audit: fx.audit, clock: systemClock, owner: 'srv_test' });
    const written = await records.update(session.id, () => ({ keepAwake: true }));
    assert.equal(written.keepAwake, true);
    assert.equal(attempts, 3, 'two lost compare-and-sets, then the write');
    stale = 100;
    attempts = 0;
    await assert.rejects(
      records.update(session.id, () => ({ keepAwake: false })),
      { code: 'WRITE_CONFLICT' },
    );
    assert.equal(attempts, 5);
    assert.equal((await fx.sessions.get(session.id)).keepAwake, true, 'the lost writes changed nothing');
  });
});
