/**
 * The takeover terminal's bounds over a real listening server (fake driver,
 * real SQLite): a driver without PTYs is refused with NOT_AVAILABLE naming
 * it; the console's login cookie opens a terminal recorded as its person; a
 * suspend ends a takeover (machine-stopped) instead of waiting behind it; a
 * server that stops ends its takeovers and audits their ends. The PTY here
 * is a scripted stand-in (an echoing "shell"); the real one is tested on
 * gVisor in packages/cli/test/e2e/terminal.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Duplex } from 'node:stream';
import { WebSocket } from 'ws';
import { startServer, type RunningServer } from '../../../src/server.js';
import { FakeDriver } from '../../../src/drivers/fake/fake-driver.js';
import type { ExecOutcome, SandboxHandle, SandboxTerminal, TerminalRequest } from '../../../src/core/sandbox-driver.js';
import { DirectoryDisks, StaticImages } from '../../support/core-fixture.js';

const TOKEN = 'terminal-http-test-token-0123456789';

/** A fake whose terminal echoes what it is sent and exits with N on `exit N`. */
class ScriptedTerminalDriver extends FakeDriver {
  readonly open = new Set<Duplex>();

  constructor() {
    super({ capabilities: { terminal: true } });
  }

  override async openTerminal(_handle: SandboxHandle, request: TerminalRequest): Promise<SandboxTerminal> {
    let finish!: (outcome: ExecOutcome) => void;
    const exited = new Promise<ExecOutcome>((resolve) => (finish = resolve));
    const stream = new Duplex({
      read() {},
      write(chunk: Buffer, _encoding, callback) {
        const text = chunk.toString();
        const exit = /^exit (\d+)/.exec(text);
        if (exit) {
          finish({ exitCode: Number(exit[1]), timedOut: false, aborted: false, durationMs: 1 });
          stream.push(null);
        } else {
          stream.push(`echo:${text}`);
        }
        callback();
      },
      destroy(error, callback) {
        finish({ exitCode: -1, timedOut: false, aborted: true, durationMs: 1 });
        callback(error);
      },
    });
    this.open.add(stream);
    void exited.then(() => this.open.delete(stream));
    stream.push(`size ${request.rows}x${request.columns}\n`);
    return { stream, exited, resize: (rows, columns) => stream.push(`resized ${rows}x${columns}\n`), kill: () => stream.destroy() };
  }
}

async function start(root: string, name: string, driver: FakeDriver): Promise<RunningServer> {
  const consoleDir = join(root, `${name}-console`);
  mkdirSync(consoleDir, { recursive: true });
  writeFileSync(join(consoleDir, 'index.html'), '<!doctype html><title>console</title>');
  return startServer({
    dataDir: join(root, name),
    host: '127.0.0.1',
    port: 0,
    token: TOKEN,
    driver,
    disks: new DirectoryDisks(join(root, `${name}-disks`)),
    images: new StaticImages(),
    consoleDir,
  });
}

async function eventually<T>(read: () => T | Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) assert.fail(`${what}: last seen ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the takeover terminal over HTTP (fake driver)', () => {
  let root: string;
  let withoutPty: RunningServer;
  let withPty: RunningServer;
  let driver: ScriptedTerminalDriver;
  let stopped = false;
  const bearer = { authorization: `Bearer ${TOKEN}` };
  const sockets: WebSocket[] = [];

  const createSession = async (server: RunningServer): Promise<string> => {
    const response = await fetch(`${server.url}/v1/sessions`, { method: 'POST', headers: { ...bearer, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(response.status, 201);
    return ((await response.json()) as { id: string }).id;
  };
  const auditTypes = async (server: RunningServer, sessionId: string): Promise<{ type: string; data: Record<string, unknown> }[]> =>
    (
      (await (await fetch(`${server.url}/v1/sessions/${sessionId}/audit?limit=1000`, { headers: bearer })).json()) as {
        records: { type: string; data: Record<string, unknown> }[];
      }
    ).records;

  /** Opens a terminal socket and collects what it receives. */
  const connect = async (server: RunningServer, sessionId: string, headers: Record<string, string>) => {
    const socket = new WebSocket(`${server.url.replace('http', 'ws')}/v1/sessions/${sessionId}/terminal`, 'airlock.terminal.v1', { headers });
    sockets.push(socket);
    const received: string[] = [];
    socket.on('message', (data: Buffer) => received.push(data.toString()));
    const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    socket.send(JSON.stringify({ type: 'resize', cols: 90, rows: 20 }));
    return { socket, received, closed };
  };

  before(async () => {
    root = mkdtempSync('/tmp/airlock-terminal-http-');
    withoutPty = await start(root, 'plain', new FakeDriver());
    driver = new ScriptedTerminalDriver();
    withPty = await start(root, 'pty', driver);
  });

  after(async () => {
    for (const socket of sockets) socket.terminate();
    await withoutPty?.close();
    if (!stopped) await withPty?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('answers 501 NOT_AVAILABLE, naming the driver, for a session on a driver without PTYs', async () => {
    const sessionId = await createSession(withoutPty);
    const response = await fetch(`${withoutPty.url}/v1/sessions/${sessionId}/terminal`, { headers: bearer });
    assert.equal(response.status, 501);
    const { error } = (await response.json()) as { error: { code: string; message: string; details: Record<string, unknown> } };
    assert.equal(error.code, 'NOT_AVAILABLE');
    assert.match(error.message, /fake driver, which offers no terminal/);
    assert.equal(error.details['capability'], 'terminal');
    assert.ok(!(await auditTypes(withoutPty, sessionId)).some((record) => record.type.startsWith('takeover.')), 'nothing was audited');
  });

  it('opens with the console’s login cookie (no CSRF header on the GET upgrade) and records the person', async () => {
    const login = await fetch(`${withPty.url}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: TOKEN }),
    });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const sessionId = await createSession(withPty);
    const terminal = await connect(withPty, sessionId, { cookie, origin: withPty.url });
    await eventually(
      () => terminal.received.join(''),
      (text) => text.includes('size 20x90'),
      'the shell opened at the first resize',
    );
    terminal.socket.send(Buffer.from('exit 4'));
    assert.equal(await terminal.closed, 1000);
    assert.deepEqual(JSON.parse(terminal.received.at(-1) ?? '{}'), { type: 'exit', code: 4 });
    const ended = await eventually(
      () => auditTypes(withPty, sessionId),
      (records) => records.some((record) => record.type === 'takeover.ended'),
      'the end is audited',
    );
    const end = ended.find((record) => record.type === 'takeover.ended');
    assert.equal(end?.data['by'], 'console:admin');
    assert.equal(end?.data['client'], 'console');
    assert.equal(end?.data['reason'], 'exited');
  });

  it('a pause ends the takeover (machine-stopped) instead of waiting behind it', async () => {
    const sessionId = await createSession(withPty);
    const terminal = await connect(withPty, sessionId, bearer);
    await eventually(
      () => driver.open.size,
      (size) => size === 1,
      'the terminal is open',
    );
    const paused = await fetch(`${withPty.url}/v1/sessions/${sessionId}/pause`, { method: 'POST', headers: bearer });
    assert.equal(paused.status, 200, await paused.clone().text());
    await terminal.closed;
    const last = JSON.parse(terminal.received.at(-1) ?? '{}') as { type: string; message: string };
    assert.equal(last.type, 'error');
    assert.match(last.message, /suspended, paused/);
    const records = await auditTypes(withPty, sessionId);
    assert.equal(records.find((record) => record.type === 'takeover.ended')?.data['reason'], 'machine-stopped');
  });

  it('refuses a malformed control message and keeps the terminal', async () => {
    const sessionId = await createSession(withPty);
    const terminal = await connect(withPty, sessionId, bearer);
    terminal.socket.send('not json');
    terminal.socket.send(JSON.stringify({ type: 'resize', cols: 0, rows: 10 }));
    await eventually(
      () => terminal.received.filter((text) => text.startsWith('{"type":"error"')).length,
      (count) => count === 2,
      'two refusals',
    );
    terminal.socket.send(JSON.stringify({ type: 'resize', cols: 50, rows: 10 }));
    await eventually(
      () => terminal.received.join(''),
      (text) => text.includes('resized 10x50'),
      'a good resize still works',
    );
    terminal.socket.close(1000);
    await terminal.closed;
  });

  it('a server that stops ends its takeovers and audits their ends', async () => {
    const sessionId = await createSession(withPty);
    const terminal = await connect(withPty, sessionId, bearer);
    await eventually(
      () => driver.open.size,
      (size) => size === 1,
      'the terminal is open',
    );
    await withPty.close();
    stopped = true;
    await terminal.closed;
    assert.equal(driver.open.size, 0, 'the shell was ended');
    const again = await start(root, 'pty', new ScriptedTerminalDriver());
    try {
      const end = (await auditTypes(again, sessionId)).find((record) => record.type === 'takeover.ended');
      assert.equal(end?.data['reason'], 'server-stopped');
    } finally {
      await again.close();
    }
  });
});
