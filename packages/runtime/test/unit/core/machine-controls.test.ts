import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { Duplex } from 'node:stream';
import { coreFixture, type CoreFixture } from '../../support/core-fixture.js';
import { SessionResizer, resizeCeilingOf } from '../../../src/core/session-resizer.js';
import { SessionPorts } from '../../../src/core/session-ports.js';
import { SessionLocks } from '../../../src/core/session-locks.js';
import type { ExecRequest } from '../../../src/core/sandbox-driver.js';

describe('SessionResizer', () => {
  let fx: CoreFixture;
  let resizer: SessionResizer;
  const resized: unknown[] = [];
  beforeEach(() => {
    fx = coreFixture();
    resized.length = 0;
    fx.driver.resize = async (_handle, resources) => void resized.push(resources);
    resizer = new SessionResizer(fx.sessions);
  });
  afterEach(() => fx.close());

  it('resizes in place up to 4× the starting size by default, audited and shown in the record', async () => {
    const session = await fx.sessions.create({ contract: fx.contract({ resources: { cpus: 1, memoryMb: 256 } }) });
    assert.deepEqual(resizeCeilingOf(session), { cpus: 4, memoryMb: 1024 });
    const after = await resizer.resize(session.id, { cpus: 2, memoryMb: 1024 });
    assert.deepEqual(resized, [{ cpus: 2, memoryMb: 1024 }]);
    assert.equal(after.resources.memoryMb, 1024);
    assert.equal(after.resources.cpus, 2);
    assert.equal((await fx.sessions.get(session.id)).resources.memoryMb, 1024);
    const record = (await fx.store.listAudit(session.id)).find((entry) => entry.type === 'session.resized');
    assert.deepEqual(record?.data['from'], { cpus: 1, memoryMb: 256 });
    assert.deepEqual(record?.data['to'], { cpus: 2, memoryMb: 1024 });
    assert.equal(after.sandbox?.sandboxId, session.sandbox?.sandboxId, 'the same machine: no restart');
  });

  it('refuses beyond the ceiling, below current use, and on per-call sessions, and changes nothing', async () => {
    const session = await fx.sessions.create({ contract: fx.contract({ resources: { cpus: 1, memoryMb: 256, maxMemoryMb: 512 } }) });
    await assert.rejects(resizer.resize(session.id, { memoryMb: 1024 }), (error: { code: string; message: string }) => {
      assert.equal(error.code, 'INVALID_ARGUMENTS');
      assert.match(error.message, /ceiling of 512 MB/);
      return true;
    });
    await assert.rejects(resizer.resize(session.id, { cpus: 5 }), { code: 'INVALID_ARGUMENTS' });
    await assert.rejects(resizer.resize(session.id, { memoryMb: 10 }), { code: 'INVALID_ARGUMENTS' });
    await assert.rejects(resizer.resize(session.id, {}), { code: 'INVALID_ARGUMENTS' });
    fx.driver.usage = async () => ({ cpuSeconds: 1, memoryBytes: 200 * 1024 * 1024, peakMemoryBytes: 200 * 1024 * 1024 });
    await assert.rejects(resizer.resize(session.id, { memoryMb: 128 }), (error: { code: string; message: string }) => {
      assert.equal(error.code, 'INVALID_STATE');
      assert.match(error.message, /uses 200 MB now/);
      return true;
    });
    assert.deepEqual(resized, [], 'the driver was never asked');
    assert.equal((await fx.sessions.get(session.id)).resources.memoryMb, 256);
    const perCall = await fx.sessions.create({ contract: fx.contract(), mode: 'per-call' });
    await assert.rejects(resizer.resize(perCall.id, { memoryMb: 1024 }), { code: 'INVALID_STATE' });
  });

  it('wakes a suspended machine to resize it', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    await fx.sessions.suspend(session.id);
    const after = await resizer.resize(session.id, { cpus: 2 });
    assert.equal(after.state, 'running');
    assert.equal(after.resources.cpus, 2);
  });
});

describe('SessionPorts', () => {
  let fx: CoreFixture;
  let ports: SessionPorts;
  beforeEach(() => {
    fx = coreFixture();
    ports = new SessionPorts(fx.sessions);
  });
  afterEach(() => fx.close());

  it('forwards only exposed ports, wakes a suspended machine for a connection, and audits exposure', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    await assert.rejects(ports.forward(session.id, 8000, async () => 'x'), { code: 'INVALID_STATE' });
    await ports.expose(session.id, 8000);
    await ports.expose(session.id, 8000);
    assert.deepEqual(await ports.list(session.id), [8000]);
    fx.driver.connectHandler = () => echoStream();
    await fx.sessions.suspend(session.id);
    const { result } = await ports.forward(session.id, 8000, async (socket) => {
      socket.end('ping');
      let text = '';
      for await (const chunk of socket) text += String(chunk);
      return text;
    });
    assert.equal(result, 'ping');
    assert.equal((await fx.sessions.get(session.id)).state, 'running');
    await ports.unexpose(session.id, 8000);
    assert.deepEqual(await ports.list(session.id), []);
    await assert.rejects(ports.unexpose(session.id, 8000), { code: 'NOT_FOUND' });
    const types = (await fx.store.listAudit(session.id)).map((entry) => entry.type);
    assert.equal(types.filter((type) => type === 'port.exposed').length, 1);
    assert.ok(types.includes('port.unexposed'));
    await assert.rejects(ports.expose(session.id, 70000), { code: 'INVALID_ARGUMENTS' });
  });

  it('refuses ports of per-call sessions: nothing listens between calls', async () => {
    const session = await fx.sessions.create({ contract: fx.contract(), mode: 'per-call' });
    await assert.rejects(ports.expose(session.id, 8000), { code: 'INVALID_STATE' });
  });
});

describe('per-call execution', () => {
  let fx: CoreFixture;
  const requests: Omit<ExecRequest, 'argv'>[] = [];
  beforeEach(() => {
    fx = coreFixture();
    requests.length = 0;
    const runOnce = fx.driver.runOnce.bind(fx.driver);
    fx.driver.runOnce = async (spec, request) => {
      requests.push(request);
      return runOnce(spec, request);
    };
  });
  afterEach(() => fx.close());

  it("caps a per-call command's timeout at the contract's perCall.maxSeconds, and meters the sandbox time", async () => {
    const session = await fx.sessions.create({ contract: fx.contract({ perCall: { maxSeconds: 5 } }), mode: 'per-call' });
    await fx.pipeline.submit(session.id, 'exec', { argv: ['sleep', '60'], timeoutMs: 60_000 });
    await fx.pipeline.submit(session.id, 'exec', { argv: ['true'], timeoutMs: 1_000 });
    assert.deepEqual(requests.map((request) => request.timeoutMs), [5_000, 1_000]);
    assert.ok(((await fx.sessions.get(session.id)).meters.perCallSeconds ?? 0) > 0);
    fx.driver.runOnce = async () => ({ exitCode: 137, timedOut: true, aborted: false, durationMs: 5_000, startMs: 300 });
    const killed = await fx.pipeline.submit(session.id, 'exec', { argv: ['sleep', '60'], timeoutMs: 60_000 });
    assert.equal(killed.status, 'completed');
    if (killed.status !== 'completed') return;
    assert.equal(killed.result['timedOut'], true);
    assert.equal(killed.result['limitedBy'], 'contract.perCall.maxSeconds');
    assert.equal(killed.timing.startMs, 300);
    assert.equal(killed.timing.runMs, 4_700);
  });

  it('runs parallel calls at the same time, each in its own sandbox', async () => {
    const session = await fx.sessions.create({ contract: fx.contract(), mode: 'per-call' });
    let running = 0;
    let most = 0;
    const sandboxes = new Set<string>();
    fx.driver.runOnce = async (spec) => {
      sandboxes.add(spec.sandboxId);
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 20));
      running -= 1;
      return { exitCode: 0, timedOut: false, aborted: false, durationMs: 20 };
    };
    await Promise.all([1, 2, 3, 4].map(() => fx.pipeline.submit(session.id, 'exec', { argv: ['sleep', '1'] })));
    assert.equal(most, 4);
    assert.equal(sandboxes.size, 4);
  });

  it('refuses to detach a process in a per-call sandbox, and detaches on a machine with the pid in the result', async () => {
    const perCall = await fx.sessions.create({ contract: fx.contract(), mode: 'per-call' });
    await assert.rejects(fx.pipeline.submit(perCall.id, 'exec', { command: 'sleep 100', detach: true }), { code: 'INVALID_ARGUMENTS' });
    const machine = await fx.sessions.create({ contract: fx.contract() });
    fx.driver.handler = () => ({ pid: 42 });
    const outcome = await fx.pipeline.submit(machine.id, 'exec', { command: 'python3 -m http.server', detach: true });
    assert.equal(outcome.status, 'completed');
    if (outcome.status !== 'completed') return;
    assert.equal(outcome.result['pid'], 42);
    assert.match(String(outcome.result['logPath']), /^\/tmp\/airlock\/proc_.*\.log$/);
    const started = fx.driver.execs.at(-1);
    assert.deepEqual(started?.argv, ['/bin/sh', '-c', 'python3 -m http.server'], 'the command itself is what the driver detaches');
    assert.equal(started?.detach?.logPath, outcome.result['logPath']);
  });
});

describe('SessionLocks', () => {
  it('lets calls share a session, makes a lifecycle operation wait for them, and queues later calls behind it', async () => {
    const locks = new SessionLocks();
    const order: string[] = [];
    let releaseCall = () => undefined as void;
    const call = locks.shared('s', () => new Promise<void>((resolve) => (releaseCall = resolve)).then(() => void order.push('call')));
    assert.equal(locks.isIdle('s'), false);
    const suspend = locks.exclusive('s', async () => void order.push('suspend'));
    const later = locks.shared('s', async () => void order.push('later call'));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(order, []);
    releaseCall();
    await Promise.all([call, suspend, later]);
    assert.deepEqual(order, ['call', 'suspend', 'later call']);
    assert.equal(locks.isIdle('s'), true);
  });

  it('tells who keeps streams into a machine when a lifecycle operation asks for it, even with no call in flight', async () => {
    const locks = new SessionLocks();
    const requested: string[] = [];
    locks.whenExclusiveRequested((sessionId) => requested.push(`${sessionId}: wanted ${locks.exclusiveWanted(sessionId)}`));
    assert.equal(locks.exclusiveWanted('s'), false);
    let wantedDuring = false;
    await locks.exclusive('s', async () => void (wantedDuring = locks.exclusiveWanted('s')));
    assert.deepEqual(requested, ['s: wanted false'], 'told before the operation has the lock');
    assert.equal(wantedDuring, true);
    assert.equal(locks.exclusiveWanted('s'), false);
    let releaseCall = () => undefined as void;
    const call = locks.shared('s', () => new Promise<void>((resolve) => (releaseCall = resolve)));
    const suspend = locks.exclusive('s', async () => undefined);
    assert.equal(locks.exclusiveWanted('s'), true, 'a waiting operation counts');
    await new Promise((resolve) => setImmediate(resolve));
    releaseCall();
    await Promise.all([call, suspend]);
    assert.equal(requested.length, 2);
  });
});

/** A stream that answers with what it was sent, once its writable side ends. */
function echoStream(): Duplex {
  const chunks: Buffer[] = [];
  return new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk);
      callback();
    },
    final(callback) {
      this.push(Buffer.concat(chunks));
      this.push(null);
      callback();
    },
  });
}
