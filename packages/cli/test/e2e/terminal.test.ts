/**
 * The takeover terminal end to end (issue 15, item 6), on gVisor with the
 * server as its own process: a WebSocket client speaking
 * `airlock.terminal.v1` runs commands, resizes (stty sees it) and gets the
 * exit code; an agent's tool call made during the takeover waits (TAKEOVER)
 * and completes after hand-back; the audit names the person; the recording
 * is asciicast v2 with the output and matches its audited sha256; `airlock
 * shell` takes piped input and exits with the shell's code; a sleeping
 * machine is woken for the terminal; a restart leaves nothing held; bad
 * requests are refused before the upgrade with their codes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { WebSocket } from 'ws';
import { Sandbox, type AuditRecord, type WebSocketConstructor } from '@airlock/sdk';
import { TestInstallation } from '../support/test-installation.js';

const PROTOCOL = 'airlock.terminal.v1';

/** A terminal client as a test drives it: output so far, control messages, and how the socket closed. */
interface TestTerminal {
  socket: WebSocket;
  output(): string;
  controls: Record<string, unknown>[];
  closed: Promise<{ code: number; reason: string }>;
}

async function eventually<T>(read: () => T | Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await read();
    if (done(last)) return last;
    if (Date.now() > deadline) assert.fail(`${what}: not reached within ${timeoutMs} ms; last seen ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the takeover terminal on gVisor (issue 15, item 6)', { timeout: 600_000 }, () => {
  let installation: TestInstallation;
  let sandbox: Sandbox;
  const opened: WebSocket[] = [];

  const terminalUrl = (sessionId: string) => `ws://127.0.0.1:${installation.port}/v1/sessions/${sessionId}/terminal`;
  const bearer = () => ({ authorization: `Bearer ${installation.token}` });

  /** Opens a terminal with the bearer token and sends its size first, as the console does. */
  async function openTerminal(sessionId: string, size = { cols: 100, rows: 30 }): Promise<TestTerminal> {
    const socket = new WebSocket(terminalUrl(sessionId), PROTOCOL, { headers: bearer() });
    opened.push(socket);
    const chunks: Buffer[] = [];
    const controls: Record<string, unknown>[] = [];
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) chunks.push(Buffer.from(data));
      else controls.push(JSON.parse(data.toString('utf8')) as Record<string, unknown>);
    });
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    assert.equal(socket.protocol, PROTOCOL);
    socket.send(JSON.stringify({ type: 'resize', ...size }));
    return { socket, output: () => Buffer.concat(chunks).toString('utf8'), controls, closed };
  }

  /** The HTTP status a WebSocket handshake was refused with, and the error body. */
  async function refusedUpgrade(url: string, headers: Record<string, string>): Promise<{ status: number; code: string; message: string }> {
    const socket = new WebSocket(url, PROTOCOL, { headers });
    opened.push(socket);
    return new Promise((resolve, reject) => {
      socket.once('open', () => reject(new Error('the upgrade was accepted')));
      socket.once('error', () => undefined);
      socket.once('unexpected-response', (_request, response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => {
          const error = (JSON.parse(body) as { error: { code: string; message: string } }).error;
          resolve({ status: response.statusCode ?? 0, ...error });
        });
      });
    });
  }

  const auditOf = async (session: Sandbox, type: string): Promise<AuditRecord[]> =>
    (await session.audit({ limit: 1000 })).filter((record) => record.type === type);

  before(async () => {
    installation = await TestInstallation.start();
    sandbox = await Sandbox.create({ url: installation.url, token: installation.token });
  });

  after(async () => {
    for (const socket of opened) socket.terminate();
    await installation?.destroy();
  });

  it('runs commands on a PTY, follows resizes and reports the exit code', async () => {
    const terminal = await openTerminal(sandbox.id);
    terminal.socket.send(Buffer.from('tty; stty size; echo marker-$((6*7))\n'));
    await eventually(terminal.output, (text) => /\/dev\/pts\/\d+/.test(text) && text.includes('30 100') && text.includes('marker-42'), 'first output');
    terminal.socket.send(JSON.stringify({ type: 'resize', cols: 120, rows: 40 }));
    terminal.socket.send(Buffer.from('stty size\n'));
    await eventually(terminal.output, (text) => text.includes('40 120'), 'the new size');
    terminal.socket.send(Buffer.from('exit 5\n'));
    const closed = await terminal.closed;
    assert.deepEqual(terminal.controls.at(-1), { type: 'exit', code: 5 });
    assert.equal(closed.code, 1000);
  });

  it('holds the agent’s calls while the person types, and lets them go at hand-back', async () => {
    const terminal = await openTerminal(sandbox.id);
    terminal.socket.send(Buffer.from('echo holding; cat /proc/$$/comm\n'));
    await eventually(terminal.output, (text) => text.includes('holding') && /\nbash\r?\n/.test(text), 'the shell (bash) answers');
    let settled = false;
    const call = sandbox.commands.run(['sh', '-c', 'echo agent-ran']).finally(() => (settled = true));
    const waiting = await eventually(
      () => auditOf(sandbox, 'tool-call.waiting'),
      (records) => records.some((record) => record.data['reason'] === 'TAKEOVER'),
      'the call waits with reason TAKEOVER',
    );
    assert.equal(settled, false, 'the call ran during the takeover');
    const takeoverId = (await auditOf(sandbox, 'takeover.started')).at(-1)?.data['takeoverId'];
    terminal.socket.close(1000, 'handed back');
    const result = await call;
    assert.equal(result.stdout.trim(), 'agent-ran');
    // The takeover's shell is gone from the machine once handed back: nothing of it keeps running.
    await eventually(
      async () => (await sandbox.commands.run(['sh', '-c', 'cat /proc/[0-9]*/comm'])).stdout.split('\n'),
      (names) => !names.includes('bash'),
      'the takeover shell ended',
    );
    const records = await sandbox.audit({ limit: 1000 });
    const ended = records.find((record) => record.type === 'takeover.ended' && record.data['takeoverId'] === takeoverId);
    assert.ok(ended, 'takeover.ended is in the audit');
    assert.equal(ended.data['reason'], 'handed-back');
    assert.equal(ended.data['by'], 'token:admin');
    const started = records.find((record) => record.type === 'takeover.started' && record.data['takeoverId'] === takeoverId);
    assert.equal(started?.data['by'], 'token:admin');
    const callId = waiting.at(-1)?.data['gen_ai.tool.call.id'];
    const completed = records.find((record) => record.type === 'tool-call.completed' && record.data['gen_ai.tool.call.id'] === callId);
    assert.ok(completed && ended.seq < completed.seq, 'the call completed after the hand-back');
    assert.equal((await sandbox.verifyAudit()).ok, true);
  });

  it('records the terminal session as asciicast v2, downloadable from the audit’s link', async () => {
    const terminal = await openTerminal(sandbox.id, { cols: 90, rows: 25 });
    terminal.socket.send(Buffer.from('echo recorded-$((2+3))\nexit\n'));
    await terminal.closed;
    const ended = (await auditOf(sandbox, 'takeover.ended')).at(-1);
    assert.ok(ended);
    const response = await fetch(`${installation.url}${String(ended.data['recording'])}`, { headers: bearer() });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'application/x-asciicast');
    const bytes = Buffer.from(await response.arrayBuffer());
    assert.equal(createHash('sha256').update(bytes).digest('hex'), ended.data['recordingSha256']);
    assert.equal(bytes.length, ended.data['recordingBytes']);
    const [headerLine, ...eventLines] = bytes.toString('utf8').trimEnd().split('\n');
    const header = JSON.parse(headerLine ?? '') as Record<string, unknown>;
    assert.equal(header['version'], 2);
    assert.equal(header['width'], 90);
    assert.equal(header['height'], 25);
    assert.equal(typeof header['timestamp'], 'number');
    const events = eventLines.map((line) => JSON.parse(line) as [number, string, string]);
    let previous = 0;
    for (const [seconds, kind, data] of events) {
      assert.ok(typeof seconds === 'number' && seconds >= previous, 'event times never go back');
      assert.ok(['o', 'i', 'r'].includes(kind));
      assert.equal(typeof data, 'string');
      previous = seconds;
    }
    assert.match(
      events
        .filter(([, kind]) => kind === 'o')
        .map(([, , data]) => data)
        .join(''),
      /recorded-5/,
    );
    assert.match(
      events
        .filter(([, kind]) => kind === 'i')
        .map(([, , data]) => data)
        .join(''),
      /echo recorded-\$\(\(2\+3\)\)/,
    );
    const missing = await fetch(`${installation.url}/v1/sessions/${sandbox.id}/terminal/recordings/tty_nosuchrecording`, { headers: bearer() });
    assert.equal(missing.status, 404);
  });

  it('`airlock shell ID` takes piped input and exits with the shell’s code', async () => {
    const result = await installation.cliAsync(['shell', sandbox.id], { input: 'echo hi-$((1+2)); exit 3\n' });
    assert.equal(result.code, 3, result.stderr);
    assert.match(result.stdout, /hi-3/);
    const ended = (await auditOf(sandbox, 'takeover.ended')).at(-1);
    assert.equal(ended?.data['client'], 'cli');
    assert.equal(ended?.data['exitCode'], 3);
    const unknown = await installation.cliAsync(['shell', 'ses_nosuchsession'], { input: 'exit\n' });
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /SESSION_NOT_FOUND/);
  });

  it('the SDK’s pty opens, writes, resizes, reads and exits', async () => {
    const attached = await Sandbox.connect(sandbox.id, {
      url: installation.url,
      token: installation.token,
      WebSocket: WebSocket as unknown as WebSocketConstructor,
    });
    const pty = await attached.pty.open({ rows: 20, cols: 70 });
    let output = '';
    pty.onData((bytes) => (output += Buffer.from(bytes).toString('utf8')));
    pty.write('stty size\n');
    await eventually(
      () => output,
      (text) => text.includes('20 70'),
      'the SDK terminal size',
    );
    pty.resize(22, 77);
    pty.write('stty size; exit 7\n');
    assert.equal(await pty.exited, 7);
    assert.match(output, /22 77/);
    await pty.close();
  });

  it('a suspend during a takeover ends it (machine-stopped) rather than wait behind it; the next terminal wakes the machine, as an audited step', async () => {
    const holder = await openTerminal(sandbox.id);
    holder.socket.send(Buffer.from('echo before-suspend\n'));
    await eventually(holder.output, (text) => text.includes('before-suspend'), 'the shell answers');
    await sandbox.suspend();
    await holder.closed;
    assert.equal(holder.controls.at(-1)?.['type'], 'error');
    assert.match(String(holder.controls.at(-1)?.['message']), /suspended/);
    const stopped = (await auditOf(sandbox, 'takeover.ended')).at(-1);
    assert.equal(stopped?.data['reason'], 'machine-stopped');
    const terminal = await openTerminal(sandbox.id);
    terminal.socket.send(Buffer.from('echo awake\nexit\n'));
    await terminal.closed;
    assert.match(terminal.output(), /awake/);
    const woken = (await sandbox.audit({ limit: 1000 })).filter((record) => record.type === 'session.resumed').at(-1);
    assert.equal(woken?.data['wokenBy'], 'takeover');
  });

  it('refuses before the upgrade: unknown session 404, no token 401, foreign Origin 403, a per-call session 409, a second holder 409', async () => {
    assert.deepEqual((await refusedUpgrade(terminalUrl('ses_nosuchsession'), bearer())).status, 404);
    const anonymous = await refusedUpgrade(terminalUrl(sandbox.id), {});
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.code, 'UNAUTHORIZED');
    const foreign = await refusedUpgrade(terminalUrl(sandbox.id), { ...bearer(), origin: 'https://evil.example' });
    assert.equal(foreign.status, 403);
    assert.equal(foreign.code, 'ORIGIN_FORBIDDEN');
    const perCall = await Sandbox.create({ url: installation.url, token: installation.token, mode: 'per-call' });
    const noMachine = await refusedUpgrade(terminalUrl(perCall.id), bearer());
    assert.equal(noMachine.status, 409);
    assert.match(noMachine.message, /--mode machine/);
    const holder = await openTerminal(sandbox.id);
    const second = await refusedUpgrade(terminalUrl(sandbox.id), bearer());
    assert.equal(second.status, 409);
    assert.match(second.message, /already taken over by token:admin/);
    holder.socket.close(1000);
    await holder.closed;
    const described = await fetch(`${installation.url}/v1/sessions/${sandbox.id}/terminal`, { headers: bearer() });
    assert.equal(described.status, 200);
    assert.equal(((await described.json()) as { protocol: string }).protocol, PROTOCOL);
  });

  it('holds nothing after a server restart', async () => {
    const terminal = await openTerminal(sandbox.id);
    terminal.socket.send(Buffer.from('echo before-restart\n'));
    await eventually(terminal.output, (text) => text.includes('before-restart'), 'the shell answers');
    await installation.crashServer();
    await terminal.closed;
    await installation.startServer();
    const result = await sandbox.commands.run(['sh', '-c', 'echo after-restart']);
    assert.equal(result.stdout.trim(), 'after-restart');
    const described = (await (await fetch(`${installation.url}/v1/sessions/${sandbox.id}/terminal`, { headers: bearer() })).json()) as { takeover: unknown };
    assert.equal(described.takeover, null);
  });
});
