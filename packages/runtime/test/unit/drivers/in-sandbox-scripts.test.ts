/**
 * The command protocol (INIT, JOB, RELAY and KILL scripts) run by the host's
 * static busybox in a temp dir instead of the sandbox's run dir: output
 * streams, exit codes, stdin, background writers, concurrent calls, the kill
 * path and what a call leaves behind. Fast and without gVisor; the same
 * behaviour against real runsc (checkpoint/restore included) is the driver
 * conformance suite's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandScript, INIT_SCRIPT, JOB_SCRIPT, KILL_SCRIPT, RELAY_SCRIPT, RUN_DIR, TOOLBOX_PATH } from '../../../src/drivers/gvisor/in-sandbox-scripts.js';
import { START_MARKER } from '../../../src/drivers/gvisor/start-marker.js';

const BUSYBOX = '/bin/busybox';
const available = existsSync(BUSYBOX);

interface Call {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  ms: number;
}

describe('in-sandbox command protocol (host busybox)', { skip: available ? false : `no static busybox at ${BUSYBOX}` }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-protocol-'));
  const runDir = join(dir, 'run');
  const local = (script: string): string => script.replaceAll(RUN_DIR, runDir).replaceAll(TOOLBOX_PATH, BUSYBOX);
  let init: ChildProcess | undefined;

  const relay = (argv: string[], stdin?: string): { child: ChildProcess; done: Promise<Call> } => {
    const started = performance.now();
    // Its own session, as under `runsc exec`: the kill script kills the relay's process group.
    const child = spawn(BUSYBOX, ['sh', '-c', local(RELAY_SCRIPT), 'airlock-exec', commandScript(argv, '/', {}), stdin === undefined ? '0' : '1'], { stdio: 'pipe', detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(stdin);
    const done = new Promise<Call>((resolve) => {
      child.once('close', (code, signal) => {
        assert.ok(stdout.startsWith(START_MARKER), `stdout does not start with the start marker: ${JSON.stringify(stdout.slice(0, 40))}`);
        resolve({ stdout: stdout.slice(START_MARKER.length), stderr, code, signal, ms: performance.now() - started });
      });
    });
    return { child, done };
  };
  const call = (argv: string[], stdin?: string): Promise<Call> => relay(argv, stdin).done;

  /** Host pids whose command line names this test's run dir: init, the JOBs and their subshells. */
  const ownProcesses = (): number[] =>
    readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry))
      .filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(runDir);
        } catch {
          return false;
        }
      })
      .map(Number);

  before(async () => {
    mkdirSync(runDir);
    init = spawn(BUSYBOX, ['sh', '-c', local(INIT_SCRIPT), 'airlock-init', local(JOB_SCRIPT), '4096'], { stdio: 'ignore' });
    for (let waited = 0; waited < 100 && !existsSync(join(runDir, 'next')); waited++) await sleep(50);
  });
  after(() => {
    for (const pid of [...(init?.pid ? [init.pid] : []), ...ownProcesses()]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps stdout and stderr apart, in order, and passes the exit code', async () => {
    const result = await call(['sh', '-c', 'echo out; echo err >&2; seq 1 3; exit 3']);
    assert.deepEqual([result.stdout, result.stderr, result.code], ['out\n1\n2\n3\n', 'err\n', 3]);
    assert.equal((await call(['sh', '-c', 'kill -9 $$'])).code, 137);
    assert.equal((await call(['no-such-program-anywhere'])).code, 127);
  });

  it('feeds stdin, small and larger than a pipe buffer, and EOF without it', async () => {
    assert.equal((await call(['cat'], 'hello\nworld')).stdout, 'hello\nworld');
    assert.equal((await call(['wc', '-c'], 'a'.repeat(300_000))).stdout.trim(), '300000');
    const none = await call(['cat']);
    assert.deepEqual([none.stdout, none.code], ['', 0]);
  });

  it('copies output larger than a pipe buffer', async () => {
    const result = await call(['sh', '-c', 'head -c 1000000 /dev/zero | tr "\\0" x; head -c 200000 /dev/zero | tr "\\0" y >&2']);
    assert.equal(result.stdout.length, 1_000_000);
    assert.equal(result.stderr.length, 200_000);
  });

  it('returns while a background process keeps writing, and that process goes on', async () => {
    const pidFile = join(dir, 'printer.pid');
    const result = await call(['sh', '-c', `while :; do echo tick; sleep 0.1; done & echo $! > ${pidFile}; echo started`]);
    assert.equal(result.code, 0);
    assert.match(result.stdout, /(^|\n)started\n/);
    assert.ok(result.ms < 3_000, `the call waited for its background process (${Math.round(result.ms)} ms)`);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    await sleep(1_000);
    assert.doesNotThrow(() => process.kill(pid, 0), 'the background writer died after the call returned');
    process.kill(pid, 'SIGKILL');
  });

  it('gives concurrent calls a slot each', async () => {
    const results = await Promise.all([1, 2, 3].map((n) => call(['sh', '-c', `sleep 0.3; echo ${n}`])));
    assert.deepEqual(results.map((result) => result.stdout), ['1\n', '2\n', '3\n']);
  });

  it("the kill script ends the command's process group and the relay", async () => {
    const { child, done } = relay(['sh', '-c', 'sleep 3011 & exec sleep 3012']);
    for (let waited = 0; waited < 100 && !readdirSync(runDir).some((name) => name.endsWith('.pgid') && existsSync(join(runDir, name.replace('.pgid', '.claim')))); waited++) await sleep(50);
    await sleep(200);
    const killer = spawn(BUSYBOX, ['sh', '-c', local(KILL_SCRIPT), 'airlock-kill', String(child.pid)], { stdio: 'ignore' });
    assert.equal(await new Promise((resolve) => killer.once('close', resolve)), 0);
    const result = await done;
    // Killed, or ended by itself a moment earlier: its job died without an exit code (the host reports 137 either way).
    assert.ok(result.signal === 'SIGKILL' || result.code === 125, JSON.stringify(result));
    const sleeps = readdirSync('/proc').filter((pid) => /^\d+$/.test(pid) && /(^|\/)sleep\u0000301[12]\u0000/.test(readFileSafe(`/proc/${pid}/cmdline`)));
    assert.deepEqual(sleeps, [], 'sleeps of the killed command are still running');
  });

  it('leaves only the ready slot behind', async () => {
    for (let i = 0; i < 10; i++) assert.equal((await call(['true'])).code, 0);
    await sleep(300);
    const names = readdirSync(runDir);
    assert.deepEqual(names.filter((name) => /\.(claim|cmd)$/.test(name)), [], `finished slots left files: ${names.join(' ')}`);
    assert.equal(names.filter((name) => name.endsWith('.pgid')).length, 1, `parked slots: ${names.join(' ')}`);
  });
});

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
