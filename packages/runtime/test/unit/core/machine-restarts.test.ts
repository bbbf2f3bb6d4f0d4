import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { AirlockError } from '../../../src/core/errors.js';
import type { SandboxHandle } from '../../../src/core/sandbox-driver.js';
import { coreFixture, type CoreFixture } from '../../support/core-fixture.js';

describe('degraded machines and restart', () => {
  let fx: CoreFixture;
  beforeEach(() => {
    fx = coreFixture();
  });
  afterEach(() => fx.close());

  /** A machine whose command slot is silent: every exec times out and the health probe gets no answer. */
  function silence(): void {
    fx.driver.exec = async () => {
      throw new AirlockError('SANDBOX_NOT_ANSWERING', 'the agent in airlock-x did not answer a ping within 2000 ms');
    };
    fx.driver.health = async () => ({ answering: false, reason: 'timeout' });
  }

  it('marks a session degraded, with the cause, when its machine stops answering; later calls are refused at once with the way out', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    silence();
    await assert.rejects(fx.pipeline.submit(session.id, 'exec', { argv: ['true'] }), { code: 'SANDBOX_NOT_ANSWERING' });
    const degraded = await fx.sessions.get(session.id);
    assert.equal(degraded.state, 'degraded');
    assert.equal(degraded.failure?.code, 'SANDBOX_NOT_ANSWERING');
    assert.match(degraded.failure?.message ?? '', /health check: timeout/);
    const audited = await fx.store.listAudit(session.id, { types: ['session.degraded'] });
    assert.equal(audited.length, 1);
    const execsBefore = fx.driver.execs.length;
    await assert.rejects(fx.pipeline.submit(session.id, 'exec', { argv: ['true'] }), (error: { code: string; message: string }) => {
      assert.equal(error.code, 'SESSION_DEGRADED');
      assert.match(error.message, /airlock sessions restart/);
      return true;
    });
    assert.equal(fx.driver.execs.length, execsBefore, 'a degraded machine is not asked again');
  });

  it('leaves a session running when the driver repairs the silence on the health check', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    fx.driver.exec = async () => {
      throw new AirlockError('SANDBOX_NOT_ANSWERING', 'the agent was stopped');
    };
    fx.driver.health = async () => ({ answering: true, repaired: 'continued a stopped agent' });
    await assert.rejects(fx.pipeline.submit(session.id, 'exec', { argv: ['true'] }), { code: 'SANDBOX_NOT_ANSWERING' });
    assert.equal((await fx.sessions.get(session.id)).state, 'running');
  });

  it('restarts a degraded session on a fresh machine: new generation and sandbox, cause cleared, disk kept, audited with who', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    const oldHandle = session.sandbox as SandboxHandle;
    silence();
    await assert.rejects(fx.pipeline.submit(session.id, 'exec', { argv: ['true'] }), { code: 'SANDBOX_NOT_ANSWERING' });
    const restarted = await fx.sessions.restart(session.id, 'token:admin');
    assert.equal(restarted.state, 'running');
    assert.equal(restarted.failure, null);
    assert.equal(restarted.generation, session.generation + 1);
    assert.notEqual(restarted.sandbox?.sandboxId, oldHandle.sandboxId);
    assert.equal(fx.driver.sandboxes.has(oldHandle.sandboxId), false, 'the silent machine was destroyed');
    assert.ok(fx.driver.sandboxes.has(restarted.sandbox?.sandboxId ?? ''), 'the fresh machine runs');
    const record = (await fx.store.listAudit(session.id, { types: ['session.restarted'] })).at(-1);
    assert.equal(record?.data['from'], 'degraded');
    assert.equal(record?.data['by'], 'token:admin');
    assert.deepEqual(record?.data['kept'], ['disk']);
  });

  it('restarts a failed session whose disk is kept, and a running one', async () => {
    const failedOne = await fx.sessions.create({ contract: fx.contract() });
    fx.driver.sandboxes.clear();
    await fx.reconcile();
    assert.equal((await fx.sessions.get(failedOne.id)).state, 'failed');
    assert.equal((await fx.sessions.restart(failedOne.id)).state, 'running');
    const running = await fx.sessions.create({ contract: fx.contract() });
    const again = await fx.sessions.restart(running.id);
    assert.equal(again.state, 'running');
    assert.notEqual(again.sandbox?.sandboxId, running.sandbox?.sandboxId);
  });

  it('refuses to restart a suspended, terminated or per-call session, and changes nothing', async () => {
    const suspended = await fx.sessions.create({ contract: fx.contract() });
    await fx.sessions.suspend(suspended.id);
    await assert.rejects(fx.sessions.restart(suspended.id), { code: 'INVALID_STATE' });
    assert.equal((await fx.sessions.get(suspended.id)).state, 'suspended');
    const perCall = await fx.sessions.create({ contract: fx.contract(), mode: 'per-call' });
    await assert.rejects(fx.sessions.restart(perCall.id), { code: 'INVALID_STATE' });
    const ended = await fx.sessions.create({ contract: fx.contract() });
    await fx.sessions.terminate(ended.id);
    await assert.rejects(fx.sessions.restart(ended.id), { code: 'INVALID_STATE' });
  });

  it('a restart whose new machine fails to start leaves the session failed with the cause, never half-running', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    fx.driver.start = async () => {
      throw new AirlockError('DRIVER_FAILED', 'runsc create failed: no space left');
    };
    await assert.rejects(fx.sessions.restart(session.id), { code: 'DRIVER_FAILED' });
    const after = await fx.sessions.get(session.id);
    assert.equal(after.state, 'failed');
    assert.equal(after.pendingOperation, null);
    assert.match(after.failure?.message ?? '', /no space left/);
  });

  it('reconciles a restart interrupted by a crash into a failed session that can be restarted again', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    await fx.sessions.records.transition(session.id, 'begin-restart', { type: 'session.restart-started', data: {} });
    await fx.reconcile();
    const after = await fx.sessions.get(session.id);
    assert.equal(after.state, 'failed');
    assert.match(after.failure?.message ?? '', /restart it again/);
    assert.equal((await fx.sessions.restart(session.id)).state, 'running');
  });
});
