/**
 * Commands through the real agent binary, run as a plain host process (its
 * protocol, flow control and process handling; the sandbox-only parts are
 * in the gVisor conformance suite).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { ExecRequest } from '../../../src/core/sandbox-driver.js';
import { execThroughAgent, KILLED_EXIT_CODE } from '../../../src/drivers/agent/agent-exec.js';
import { openPortStream } from '../../../src/drivers/agent/agent-port-stream.js';
import { listProcesses, signalProcess } from '../../../src/drivers/agent/agent-system.js';
import { openTerminal } from '../../../src/drivers/agent/agent-terminal.js';
import { startHostAgent, type HostAgent } from '../../support/host-agent.js';

interface Ran {
  exitCode: number;
  timedOut: boolean;
  aborted: boolean;
  stdout: string;
  stderr: string;
  pid?: number;
}

async function run(agent: HostAgent, argv: string[], options: Partial<ExecRequest> = {}): Promise<Ran> {
  let stdout = '';
  let stderr = '';
  const outcome = await execThroughAgent(
    agent.connection,
    { argv, cwd: '/', env: {}, timeoutMs: 20_000, ...options, onStdout: (chunk) => (stdout += chunk.toString()), onStderr: (chunk) => (stderr += chunk.toString()) },
    { processLimit: 0, revive: async () => false },
  );
  return { ...outcome, stdout, stderr };
}

/** Polls until `probe` holds; fails after `timeoutMs`. */
async function until(probe: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) assert.fail(`${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('agent on the host: commands', () => {
  let agent: HostAgent;
  before(async () => {
    agent = await startHostAgent();
  });
  after(async () => {
    await agent.dispose();
  });

  it('says hello with its protocol version', () => {
    assert.equal(agent.connection.hello.major, 1);
    assert.equal(agent.connection.hello.mode, 'host');
    assert.equal(agent.connection.hello.connects, 1);
  });

  it('keeps stdout and stderr apart, reports exit codes, signals and a missing program', async () => {
    const both = await run(agent, ['sh', '-c', 'echo out; echo err >&2; exit 3']);
    assert.deepEqual([both.exitCode, both.stdout, both.stderr], [3, 'out\n', 'err\n']);
    assert.equal((await run(agent, ['sh', '-c', 'kill -9 $$'])).exitCode, 137);
    const missing = await run(agent, ['no-such-program-anywhere']);
    assert.equal(missing.exitCode, 127);
    assert.match(missing.stderr, /no-such-program-anywhere: command not found/);
    const noCwd = await run(agent, ['pwd'], { cwd: '/no/such/dir' });
    assert.equal(noCwd.exitCode, 126);
    assert.match(noCwd.stderr, /cannot change to directory/);
  });

  it('applies cwd and env on top of its own environment, as data', async () => {
    const tricky = `it's $HOME "and" \`this\``;
    const result = await run(agent, ['sh', '-c', 'pwd; printf "%s\\n" "$GREETING"; [ -n "$PATH" ] && echo has-path'], { cwd: '/tmp', env: { GREETING: tricky } });
    assert.equal(result.stdout, `/tmp\n${tricky}\nhas-path\n`);
  });

  it('streams stdin larger than every window and output of many windows, byte for byte', async () => {
    const input = Buffer.alloc(3 * 1024 * 1024, 0x61);
    const counted = await run(agent, ['wc', '-c'], { stdin: input });
    assert.equal(counted.stdout.trim(), String(input.length));
    const big = await run(agent, ['sh', '-c', 'head -c 5000000 /dev/zero | tr "\\0" b']);
    assert.equal(big.stdout.length, 5_000_000);
    assert.ok(/^b+$/.test(big.stdout));
    const none = await run(agent, ['cat']);
    assert.deepEqual([none.exitCode, none.stdout], [0, ''], 'without stdin the command sees EOF at once');
  });

  it('answers as soon as the command exits, while a background child still holds its output', async () => {
    const started = Date.now();
    const result = await run(agent, ['sh', '-c', 'sleep 30 & echo "pid=$!"']);
    assert.ok(Date.now() - started < 5_000, 'waited for the background child');
    const pid = Number(/pid=(\d+)/.exec(result.stdout)?.[1]);
    assert.ok(alive(pid), 'the background child keeps running');
    process.kill(pid, 'SIGKILL');
  });

  it('kills the whole process group on timeout and on abort', async () => {
    const timedOut = await run(agent, ['sh', '-c', 'sleep 301 & echo "pid=$!"; exec sleep 302'], { timeoutMs: 500 });
    assert.deepEqual([timedOut.exitCode, timedOut.timedOut, timedOut.aborted], [KILLED_EXIT_CODE, true, false]);
    const child = Number(/pid=(\d+)/.exec(timedOut.stdout)?.[1]);
    await until(() => !alive(child), 5_000, 'the group member died');
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const aborted = await run(agent, ['sleep', '303'], { signal: controller.signal, timeoutMs: 60_000 });
    assert.deepEqual([aborted.exitCode, aborted.aborted], [KILLED_EXIT_CODE, true]);
  });

  it('detaches a service: answers with its pid at once; a program that cannot start fails the call', async () => {
    const started = await run(agent, ['sleep', '60'], { detach: {} });
    assert.equal(started.exitCode, 0);
    assert.ok(started.pid && alive(started.pid), `no live pid: ${JSON.stringify(started)}`);
    const listed = await listProcesses(agent.connection);
    assert.ok(listed.some((entry) => entry.pid === started.pid && entry.argv.join(' ') === 'sleep 60'), 'the process list shows it');
    await signalProcess(agent.connection, started.pid, 'TERM');
    await until(() => !alive(started.pid as number), 5_000, 'the signalled service ended');
    const failed = await run(agent, ['no-such-daemon'], { detach: {} });
    assert.equal(failed.exitCode, 127);
    assert.match(failed.stderr, /no-such-daemon: command not found/);
    await assert.rejects(signalProcess(agent.connection, 1, 'KILL'), { code: 'INVALID_ARGUMENTS' });
    await assert.rejects(signalProcess(agent.connection, process.pid, 'KILL'), { code: 'NOT_FOUND' }, 'on a host only its own children');
  });

  it('relays a TCP port both ways with half-close; a closed port is PORT_UNREACHABLE', async () => {
    const server = createServer((socket) => {
      let got = '';
      socket.on('data', (chunk) => (got += chunk.toString()));
      socket.on('end', () => socket.end(`echo:${got}`));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const stream = await openPortStream(agent.connection, port);
      stream.end('ping');
      let text = '';
      for await (const chunk of stream) text += String(chunk);
      assert.equal(text, 'echo:ping');
    } finally {
      server.close();
    }
    await assert.rejects(openPortStream(agent.connection, port), { code: 'PORT_UNREACHABLE' });
  });

  it('runs a command on a terminal, with resize', async (t) => {
    if (!existsSync('/dev/ptmx')) return t.skip('no /dev/ptmx on this host');
    const terminal = openTerminal(agent.connection, { argv: ['sh', '-c', 'tty; read x; stty size; echo got:$x'], cwd: '/', env: {}, rows: 24, columns: 80 }, 0);
    let output = '';
    terminal.stream.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await until(() => /\/dev\/pts\/\d+/.test(output), 5_000, 'tty printed');
    terminal.resize(40, 100);
    terminal.stream.write('hello\n');
    const outcome = await terminal.exited;
    assert.equal(outcome.exitCode, 0);
    await until(() => output.includes('got:hello'), 5_000, 'the input reached the command');
    assert.match(output, /40 100/);
  });
});
