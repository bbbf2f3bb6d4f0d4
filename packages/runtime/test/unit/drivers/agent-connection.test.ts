/**
 * The host side against a hostile "agent" written here byte by byte: the
 * connection refuses a bad hello, and drops an agent that sends more than
 * its window, frames for streams it was never given, messages it may not
 * send, or answers bigger than asked; every call on it fails with
 * SANDBOX_NOT_ANSWERING. Late frames of a stream the host gave up are
 * ignored.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { AgentConnection } from '../../../src/drivers/agent/agent-connection.js';
import { AgentFiles } from '../../../src/drivers/agent/agent-files.js';
import { Channel, INITIAL_WINDOW, MessageType, Tag } from '../../../src/drivers/agent/agent-protocol.js';
import { encodeFrame, FieldWriter, FrameDecoder, type Frame } from '../../../src/drivers/agent/frame-codec.js';

/** A socket pair: `host` for AgentConnection, `fake` for the test's hand-written agent. */
async function pair(): Promise<{ host: Socket; fake: Socket; received: Frame[]; close: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-agent-pair-'));
  const path = join(dir, 's');
  const accepted = new Promise<Socket>((resolve) => {
    const server = createServer((socket) => {
      server.close();
      resolve(socket);
    });
    server.listen(path);
  });
  await new Promise((resolve) => setTimeout(resolve, 10));
  const fake = connect(path);
  const host = await accepted;
  const received: Frame[] = [];
  const decoder = new FrameDecoder();
  fake.on('data', (chunk: Buffer) => received.push(...decoder.push(chunk)));
  fake.on('error', () => undefined);
  return { host, fake, received, close: () => (fake.destroy(), host.destroy(), rmSync(dir, { recursive: true, force: true })) };
}

function hello(major = 1): Buffer {
  return encodeFrame(MessageType.HELLO, 0, 0, new FieldWriter().int(Tag.PROTOCOL_MAJOR, major).int(Tag.PROTOCOL_MINOR, 0).string(Tag.AGENT_VERSION, 'fake').int(Tag.PID, 1).int(Tag.CONNECTS, 1).string(Tag.MODE, 'sandbox').finish());
}

async function until(probe: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !probe(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
}

async function opened(): Promise<{ connection: AgentConnection; fake: Socket; received: Frame[]; close: () => void }> {
  const sockets = await pair();
  sockets.fake.write(hello());
  return { ...sockets, connection: await AgentConnection.open(sockets.host, { label: 'fake', helloTimeoutMs: 2_000 }) };
}

describe('agent connection against a hostile agent', () => {
  it('refuses an unknown major version, a first frame that is not HELLO, and silence', async () => {
    for (const first of [hello(2), encodeFrame(MessageType.OK, 0, 1)]) {
      const { host, fake, close } = await pair();
      fake.write(first);
      await assert.rejects(AgentConnection.open(host, { label: 'fake', helloTimeoutMs: 2_000 }), (error: { code: string; details: Record<string, unknown> }) => {
        assert.equal(error.code, 'SANDBOX_NOT_ANSWERING');
        assert.equal(error.details['reason'], 'protocol');
        return true;
      });
      close();
    }
    const { host, close } = await pair();
    await assert.rejects(AgentConnection.open(host, { label: 'fake', helloTimeoutMs: 200 }), (error: { details: Record<string, unknown> }) => error.details['reason'] === 'hello-timeout');
    close();
  });

  it('drops an agent that sends more than the window it was granted', async () => {
    const { connection, fake, received, close } = await opened();
    const stream = connection.request(MessageType.EXEC, Buffer.alloc(0), { operation: 'running' }, { onData: () => undefined });
    // A consumer that reads nothing grants nothing back.
    stream.autoGrant = false;
    await until(() => received.length > 0);
    fake.write(encodeFrame(MessageType.DATA, Channel.OUTPUT, stream.id, Buffer.alloc(65_536)));
    for (let sent = 65_536; sent <= INITIAL_WINDOW; sent += 65_536) fake.write(encodeFrame(MessageType.DATA, Channel.OUTPUT, stream.id, Buffer.alloc(65_536)));
    await assert.rejects(stream.done, (error: { code: string; details: Record<string, unknown> }) => error.code === 'SANDBOX_NOT_ANSWERING' && /past a window/.test(String(error.details['violation'])));
    assert.equal(connection.open, false);
    close();
  });

  it('drops an agent that answers a stream it was never given, or sends a host-only message', async () => {
    for (const frame of [encodeFrame(MessageType.OK, 0, 4242), encodeFrame(MessageType.EXEC, 0, 1), encodeFrame(MessageType.DATA, Channel.INPUT, 1, Buffer.from('x'))]) {
      const { connection, fake, close } = await opened();
      const pending = connection.request(MessageType.STAT, Buffer.alloc(0), { operation: 'reading' });
      fake.write(frame);
      await assert.rejects(pending.done, { code: 'SANDBOX_NOT_ANSWERING' });
      assert.equal((await connection.ended).details['reason'], 'protocol');
      close();
    }
  });

  it('drops a read that returns more than asked and a listing entry with a slash in its name', async () => {
    const files = new AgentFiles(2_000);
    {
      const { connection, fake, received, close } = await opened();
      const read = files.read(connection, '/f', { maxBytes: 4 });
      await until(() => received.length > 0);
      fake.write(encodeFrame(MessageType.DATA, Channel.OUTPUT, received[0]?.stream ?? 0, Buffer.from('too long')));
      await assert.rejects(read, (error: { code: string; details: Record<string, unknown> }) => error.code === 'SANDBOX_NOT_ANSWERING' && /at most 4 bytes/.test(String(error.details['violation'])));
      close();
    }
    {
      const { connection, fake, received, close } = await opened();
      const listing = files.list(connection, '/d');
      await until(() => received.length > 0);
      const id = received[0]?.stream ?? 0;
      fake.write(encodeFrame(MessageType.ENTRY, 0, id, new FieldWriter().string(Tag.NAME, '../../etc').int(Tag.TYPE, 1).finish()));
      fake.write(encodeFrame(MessageType.OK, 0, id, new FieldWriter().string(Tag.PATH, '/d').finish()));
      await assert.rejects(listing, { code: 'SANDBOX_NOT_ANSWERING' });
      close();
    }
  });

  it('ignores late frames of a stream the host abandoned, and answers errors as codes with the path', async () => {
    const { connection, fake, received, close } = await opened();
    const abandoned = connection.request(MessageType.EXEC, Buffer.alloc(0), { operation: 'running' });
    abandoned.cancel();
    fake.write(encodeFrame(MessageType.DATA, Channel.OUTPUT, abandoned.id, Buffer.from('late')));
    fake.write(encodeFrame(MessageType.EXITED, 0, abandoned.id, new FieldWriter().int(Tag.EXIT_CODE, 0).finish()));
    const read = new AgentFiles(2_000).read(connection, '/missing', { maxBytes: 1 });
    await until(() => received.some((frame) => frame.type === MessageType.READ));
    const id = received.find((frame) => frame.type === MessageType.READ)?.stream ?? 0;
    fake.write(encodeFrame(MessageType.ERROR, 0, id, new FieldWriter().int(Tag.ERRNO, 2).string(Tag.MESSAGE, 'No such file').finish()));
    await assert.rejects(read, (error: { code: string; message: string }) => error.code === 'FILE_NOT_FOUND' && error.message.includes('/missing'));
    assert.equal(connection.open, true, 'late frames are no violation');
    assert.ok(received.some((frame) => frame.type === MessageType.CANCEL), 'the agent was told');
    close();
  });
});
