/**
 * The agent's link to the host, with the real binary on the host: park and
 * wake (SIGUSR1), reconnection with a backoff after the host went away
 * (killing what ran for the lost caller), a stopped agent seen by a ping,
 * and malformed input from the host that it survives.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Socket } from 'node:net';
import { execThroughAgent } from '../../../src/drivers/agent/agent-exec.js';
import { MessageType, Tag } from '../../../src/drivers/agent/agent-protocol.js';
import { encodeFrame, Fields, FieldWriter, FrameDecoder, type Frame } from '../../../src/drivers/agent/frame-codec.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { AgentConnection } from '../../../src/drivers/agent/agent-connection.js';
import { agentBinary, startHostAgent } from '../../support/host-agent.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Reads frames from a raw socket until `predicate` accepts one. */
function nextFrame(socket: Socket, predicate: (frame: Frame) => boolean, timeoutMs = 5_000): Promise<Frame> {
  const decoder = new FrameDecoder();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.off('data', onData);
      reject(new Error('no such frame in time'));
    }, timeoutMs);
    const onData = (chunk: Buffer): void => {
      for (const frame of decoder.push(chunk)) {
        if (!predicate(frame)) continue;
        clearTimeout(timer);
        socket.off('data', onData);
        resolve(frame);
        return;
      }
    };
    socket.on('data', onData);
  });
}

describe('agent on the host: its link', () => {
  it('speaks over an inherited socketpair (--fd) and exits when the host closes it', async () => {
    const root = mkdtempSync(join(tmpdir(), 'airlock-agent-fd-'));
    // libuv makes a child's extra 'pipe' stdio a Unix socketpair: fd 3 in the agent.
    const child = spawn(agentBinary(), ['--fd', '3', '--root', root], { stdio: ['ignore', 'inherit', 'inherit', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const connection = await AgentConnection.open(child.stdio[3] as Duplex, { label: 'fd-agent' });
      assert.equal(connection.hello.connects, 1);
      const outcome = await execThroughAgent(connection, { argv: ['true'], cwd: '/', env: {}, timeoutMs: 10_000 }, { processLimit: 0, revive: async () => false });
      assert.equal(outcome.exitCode, 0);
      connection.close();
      assert.equal(await exited, 0, 'the agent ends with its only link');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('parks on request (answers, then closes), stays parked, and reconnects when woken by SIGUSR1', async () => {
    const agent = await startHostAgent();
    try {
      const ended = agent.connection.ended;
      await agent.connection.park(5_000);
      assert.equal((await ended).details['reason'], 'parked');
      // Parked means no retries: nothing connects until it is woken.
      await assert.rejects(agent.nextConnection(500), /did not connect/);
      agent.process.kill('SIGUSR1');
      const again = await agent.nextConnection();
      assert.equal(again.hello.connects, 2);
      assert.ok((await again.ping(2_000)).latencyMs >= 0);
    } finally {
      await agent.dispose();
    }
  });

  it('shuts down on request: answers, kills what it started, and exits', async () => {
    const agent = await startHostAgent();
    try {
      const exited = new Promise<number | null>((resolve) => agent.process.once('exit', (code) => resolve(code)));
      const stream = agent.connection.request(MessageType.EXEC, new FieldWriter().string(Tag.ARG, 'sleep').string(Tag.ARG, '300').string(Tag.CWD, '/').int(Tag.EXEC_FLAGS, 0).finish(), { operation: 'running' });
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(await agent.connection.shutdown(2_000), true);
      assert.equal(await exited, 0);
      await assert.rejects(stream.done, { code: 'SANDBOX_NOT_ANSWERING' });
    } finally {
      await agent.dispose();
    }
  });

  it('refuses to park while a stream is open', async () => {
    const agent = await startHostAgent();
    try {
      const running = execThroughAgent(agent.connection, { argv: ['sleep', '2'], cwd: '/', env: {}, timeoutMs: 20_000 }, { processLimit: 0, revive: async () => false });
      await new Promise((resolve) => setTimeout(resolve, 200));
      await assert.rejects(agent.connection.park(5_000), { code: 'SESSION_BUSY' });
      assert.equal((await running).exitCode, 0, 'the command went on');
    } finally {
      await agent.dispose();
    }
  });

  it('reconnects after losing the host, and kills the command whose caller was lost', async () => {
    const agent = await startHostAgent();
    try {
      let pid = 0;
      const stream = agent.connection.request(MessageType.EXEC, new FieldWriter().string(Tag.ARG, 'sleep').string(Tag.ARG, '300').string(Tag.CWD, '/').int(Tag.EXEC_FLAGS, 0).finish(), { operation: 'running' }, {
        onMessage: (type, fields) => {
          if (type === MessageType.STARTED) pid = fields.int(Tag.PID);
        },
      });
      for (let i = 0; i < 100 && pid === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.ok(pid > 0 && alive(pid));
      // The host goes away (a crashed control plane): the socket closes under the agent.
      for (const socket of agent.rawSockets()) socket.destroy();
      await assert.rejects(stream.done, { code: 'SANDBOX_NOT_ANSWERING' });
      const again = await agent.nextConnection(5_000);
      assert.equal(again.hello.connects, 2);
      for (let i = 0; i < 100 && alive(pid); i++) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.ok(!alive(pid), 'the lost call’s command was killed');
    } finally {
      await agent.dispose();
    }
  });

  it('a stopped agent misses its ping (SANDBOX_NOT_ANSWERING); continued, it answers again', async () => {
    const agent = await startHostAgent();
    try {
      agent.process.kill('SIGSTOP');
      await assert.rejects(agent.connection.ping(500), { code: 'SANDBOX_NOT_ANSWERING' });
      agent.process.kill('SIGCONT');
      assert.ok((await agent.connection.ping(2_000)).uptimeMs >= 0);
    } finally {
      await agent.dispose();
    }
  });

  it('survives malformed requests from the host: answers each with an error, or drops the link and reconnects', async () => {
    const agent = await startHostAgent({ raw: true });
    try {
      const socket = agent.firstSocket as Socket;
      const hello = await nextFrame(socket, (frame) => frame.type === MessageType.HELLO);
      assert.equal(new Fields(hello.payload).int(Tag.PROTOCOL_MAJOR), 1);
      const answer = (stream: number): Promise<Frame> => nextFrame(socket, (frame) => frame.stream === stream);
      // An unknown message type: ENOSYS.
      let reply = answer(1);
      socket.write(encodeFrame(0x7d, 0, 1));
      assert.equal(new Fields((await reply).payload).int(Tag.ERRNO), 38);
      // A field that runs past its frame, an integer of 3 bytes, a text with NUL: EINVAL each.
      const runsPast = Buffer.alloc(6);
      runsPast.writeUInt16LE(Tag.PATH, 0);
      runsPast.writeUInt32LE(1000, 2);
      const cases: [number, Buffer][] = [
        [2, runsPast],
        [3, new FieldWriter().bytes(Tag.LIMIT, new Uint8Array(3)).finish()],
        [4, new FieldWriter().bytes(Tag.PATH, Buffer.from('/a\0b')).finish()],
        [5, new FieldWriter().string(Tag.CWD, '/').int(Tag.EXEC_FLAGS, 0).finish()],
      ];
      for (const [stream, payload] of cases) {
        reply = answer(stream);
        socket.write(encodeFrame(stream === 5 ? MessageType.EXEC : MessageType.READ, 0, stream, payload));
        const frame = await reply;
        assert.equal(frame.type, MessageType.ERROR, `stream ${stream}`);
        assert.equal(new Fields(frame.payload).int(Tag.ERRNO), 22, `stream ${stream}`);
      }
      // A request on stream 0, and frames for streams that do not exist: an error, or silence.
      reply = answer(0);
      socket.write(encodeFrame(MessageType.STAT, 0, 0, new FieldWriter().string(Tag.PATH, '/').finish()));
      assert.equal((await reply).type, MessageType.ERROR);
      socket.write(encodeFrame(MessageType.DATA, 0, 999, Buffer.from('stray')));
      socket.write(encodeFrame(MessageType.CANCEL, 0, 998));
      reply = answer(6);
      socket.write(encodeFrame(MessageType.PING, 0, 6));
      assert.equal((await reply).type, MessageType.PONG, 'still answering');
      // A frame length past the limit: the agent drops the link and comes back.
      const bad = Buffer.alloc(12);
      bad.writeUInt32LE(0x7fffffff, 0);
      const closed = new Promise((resolve) => socket.once('close', resolve));
      socket.write(bad);
      await closed;
      const again = await agent.nextConnection(5_000);
      assert.ok(again.hello.connects >= 2);
      assert.equal(agent.process.exitCode, null, 'the agent is alive');
    } finally {
      await agent.dispose();
    }
  });
});
