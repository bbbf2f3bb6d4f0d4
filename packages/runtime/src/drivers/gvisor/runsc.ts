/**
 * A thin typed wrapper around the `runsc` binary. Every call passes
 * `--root=<driver state root>`, so Airlock's containers live in their own
 * namespace of ids and never collide with other runsc users (pitfall 4).
 */
import { execFile, spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { open, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';
import type { SandboxListing } from '../../core/sandbox-driver.js';

/** What a finished runsc command printed. */
export interface RunscResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** One container as `runsc state` / `runsc list` report it. */
export interface RunscState {
  id: string;
  /** created | running | paused | stopped */
  status: string;
  /** host pid of the sandbox process; 0 when none */
  pid: number;
}

/** Where runsc is and where it keeps its state. */
export interface RunscOptions {
  binary: string;
  /** the driver-owned `--root` */
  stateRoot: string;
}

/** Calls runsc with the driver's `--root`. */
export class Runsc {
  constructor(private readonly options: RunscOptions) {}

  get binary(): string {
    return this.options.binary;
  }

  /** Global flags that every invocation carries. */
  globalArgs(): string[] {
    return [`--root=${this.options.stateRoot}`];
  }

  /** Runs `runsc <args>` to completion; never throws for a non-zero exit (see `code`). */
  run(args: string[], options: { timeoutMs?: number; cwd?: string } = {}): Promise<RunscResult> {
    return new Promise((resolve, reject) => {
      execFile(
        this.options.binary,
        [...this.globalArgs(), ...args],
        { timeout: options.timeoutMs ?? 60_000, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024, ...(options.cwd ? { cwd: options.cwd } : {}) },
        (error, stdout, stderr) => {
          if (error && typeof error.code !== 'number') {
            if (error.code === 'ENOENT') reject(runscMissing(this.options.binary, error));
            else if (error.killed) resolve({ code: 124, stdout: String(stdout), stderr: `${String(stderr)}\nrunsc ${args[0] ?? ''} timed out` });
            else reject(new AirlockError('DRIVER_FAILED', `runsc ${args[0] ?? ''} failed: ${error.message}`, { cause: error }));
            return;
          }
          resolve({ code: error ? Number(error.code) : 0, stdout: String(stdout), stderr: String(stderr) });
        },
      );
    });
  }

  /** Like `run` but throws DRIVER_FAILED (or DISK_FULL) naming `doing` when runsc exits non-zero. */
  async check(args: string[], doing: string, options: { timeoutMs?: number; cwd?: string } = {}): Promise<RunscResult> {
    const result = await this.run(args, options);
    if (result.code !== 0) throw runscFailure(doing, result);
    return result;
  }

  /**
   * Starts `runsc <args>` as a child the caller owns (exec, run of a one-shot sandbox).
   * `wrapper` is a command line that ends by exec-ing its arguments (see NETSTACK_WRAPPER).
   */
  spawn(args: string[], options: { stdio: StdioOptions; cwd?: string; wrapper?: readonly string[] }): ChildProcess {
    const [file, argv] = this.commandLine(args, options.wrapper);
    return spawn(file, argv, {
      stdio: options.stdio,
      ...(options.cwd ? { cwd: options.cwd } : {}),
    });
  }

  /**
   * Runs a runsc command whose sandbox outlives it (`run --detach`, `restore --detach`).
   * Its stdio goes to `logPath` opened with O_APPEND: runsc keeps these descriptors in the
   * sandbox, so pipes would never close (pitfall 2), and a file without O_APPEND gets
   * overwritten at runsc's own offset (pitfall 1).
   */
  async runWithLog(args: string[], options: { logPath: string; cwd: string; timeoutMs?: number; wrapper?: readonly string[] }): Promise<RunscResult> {
    const log = await open(options.logPath, 'a');
    const before = (await log.stat()).size;
    try {
      const [file, argv] = this.commandLine(args, options.wrapper);
      const child = spawn(file, argv, { cwd: options.cwd, stdio: ['ignore', log.fd, log.fd] });
      const code = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
        child.once('error', (error: NodeJS.ErrnoException) => {
          clearTimeout(timer);
          reject(error.code === 'ENOENT' ? runscMissing(this.options.binary, error) : error);
        });
        child.once('exit', (exitCode, signal) => {
          clearTimeout(timer);
          resolve(exitCode ?? (signal ? 128 + 9 : 1));
        });
      });
      const output = (await readFile(options.logPath)).subarray(before).toString('utf8');
      return { code, stdout: '', stderr: output };
    } finally {
      await log.close();
    }
  }

  /**
   * Starts a runsc command that runs as long as its sandbox (a foreground
   * `run`), stdio to `logPath` (O_APPEND, see runWithLog); resolves `exited`
   * with its exit code. The caller decides when to wait for it.
   */
  async startWithLog(args: string[], options: { logPath: string; cwd: string; wrapper?: readonly string[] }): Promise<{ exited: Promise<number> }> {
    const log = await open(options.logPath, 'a');
    try {
      const [file, argv] = this.commandLine(args, options.wrapper);
      const child = spawn(file, argv, { cwd: options.cwd, stdio: ['ignore', log.fd, log.fd] });
      const exited = new Promise<number>((resolve) => {
        child.once('error', () => resolve(127));
        child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 + 9 : 1)));
      });
      return { exited };
    } finally {
      await log.close();
    }
  }

  private commandLine(args: string[], wrapper: readonly string[] | undefined): [string, string[]] {
    const direct = [this.options.binary, ...this.globalArgs(), ...args];
    const [file, ...argv] = wrapper && wrapper.length > 0 ? [...wrapper, ...direct] : direct;
    return [file ?? this.options.binary, argv];
  }

  /** `runsc state ID`, or undefined when runsc does not know the container. */
  async state(containerId: string): Promise<RunscState | undefined> {
    const result = await this.run(['state', containerId], { timeoutMs: 15_000 });
    if (result.code !== 0) return undefined;
    return parseState(JSON.parse(result.stdout) as unknown);
  }

  /**
   * The container's state as runsc last wrote it in its root (status, sandbox pid), read without
   * spawning runsc: `runsc state` asks the sandbox itself, which cannot answer while it is frozen.
   */
  async storedState(containerId: string): Promise<RunscState | undefined> {
    try {
      const stored = JSON.parse(await readFile(join(this.options.stateRoot, `${containerId}_sandbox:${containerId}.state`), 'utf8')) as Record<string, unknown>;
      const sandbox = (stored['sandbox'] ?? {}) as Record<string, unknown>;
      return parseState({ id: stored['id'], status: stored['status'], pid: sandbox['pid'] });
    } catch {
      return undefined;
    }
  }

  /**
   * Every container runsc keeps state of, from its state files (what `runsc list` reads too): `runsc list`
   * itself asks each sandbox, and hangs on a frozen one (measured: a timeout after 30 s).
   */
  async list(): Promise<RunscState[]> {
    const names = await readdir(this.options.stateRoot).catch(() => [] as string[]);
    const states: RunscState[] = [];
    for (const name of names) {
      const match = /^(.+)_sandbox:(.+)\.state$/.exec(name);
      if (!match || match[1] !== match[2]) continue;
      const state = await this.storedState(match[1] ?? '');
      if (state) states.push(state);
    }
    return states;
  }

  /** Whether runsc keeps any state of the container (its files exist from create to delete). */
  async hasState(containerId: string): Promise<boolean> {
    const names = await readdir(this.options.stateRoot).catch(() => [] as string[]);
    return names.some((name) => name.startsWith(`${containerId}_sandbox:`) || name === `runsc-${containerId}.sock`);
  }

  /** Removes runsc's files of a container that `delete` could not remove (runsc killed mid-way). */
  async removeLeftState(containerId: string): Promise<void> {
    for (const name of await readdir(this.options.stateRoot).catch(() => [] as string[])) {
      if (name.startsWith(`${containerId}_sandbox:`) || name === `runsc-${containerId}.sock`)
        await rm(join(this.options.stateRoot, name), { force: true, recursive: true });
    }
  }

  /** `runsc --version`, e.g. "runsc version 0.0~20240729.0". */
  async version(): Promise<string> {
    const result = await this.run(['--version'], { timeoutMs: 15_000 });
    return result.stdout.trim();
  }
}

function parseState(value: unknown): RunscState {
  const record = (value ?? {}) as Record<string, unknown>;
  return {
    id: String(record['id'] ?? ''),
    status: String(record['status'] ?? 'unknown'),
    pid: typeof record['pid'] === 'number' ? record['pid'] : 0,
  };
}

/** The error for a missing runsc binary, naming the fix. */
export function runscMissing(binary: string, cause?: unknown): AirlockError {
  return new AirlockError(
    'DRIVER_UNAVAILABLE',
    `runsc not found at ${binary}: install gVisor with \`apt-get install -t bookworm-backports runsc\` (enable bookworm-backports first) or pass runscPath`,
    { cause },
  );
}

/** Turns a failed runsc call into an AirlockError; out-of-space becomes DISK_FULL. */
export function runscFailure(doing: string, result: RunscResult): AirlockError {
  const output = `${result.stderr}\n${result.stdout}`.trim();
  const tail = output.split('\n').slice(-6).join('\n').slice(-2000);
  const connection = /cannot be saved in connected state: local (\S+), remote (\S+?):?$/m.exec(output);
  if (connection) {
    // gVisor's netstack cannot save TCP connections on eth0 (loopback ones are fine).
    return new AirlockError(
      'SESSION_BUSY',
      `${doing}: a TCP connection of the sandbox is still open (${connection[1]} to ${connection[2]}) and gVisor cannot save open network connections; close it (or wait until it ends) and retry`,
      { details: { local: connection[1], remote: connection[2] } },
    );
  }
  if (/no space left on device|ENOSPC/i.test(output)) {
    return new AirlockError('DISK_FULL', `${doing}: no space left on device; free space or raise the disk limit`, { details: { output: tail } });
  }
  return new AirlockError('DRIVER_FAILED', `${doing}: runsc exited with ${result.code}: ${tail}`, { details: { exitCode: result.code, output: tail } });
}

/** runsc's `state` keeps saying "running" after the sandbox process died; trust the process. */
export function liveStatus(runscStatus: string, processAlive: boolean): SandboxListing['status'] {
  if (runscStatus === 'running' || runscStatus === 'paused') return processAlive ? runscStatus : 'stopped';
  if (runscStatus === 'stopped') return 'stopped';
  return 'unknown';
}
