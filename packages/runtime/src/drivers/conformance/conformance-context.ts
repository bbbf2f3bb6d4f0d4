/**
 * What a driver's test file hands to the conformance suite, and the small
 * helpers the cases share. The suite knows nothing about runsc or QEMU: all
 * host-side knowledge (where a workspace lives, what a leak looks like) comes
 * through this context.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { ExecOutcome, ExecRequest, SandboxDriver, SandboxHandle, SandboxNetwork, SandboxResources, SandboxSpec } from '../../core/sandbox-driver.js';

/** Options for a new spec. */
export interface SpecOptions {
  resources?: Partial<SandboxResources>;
  /** reuse this spec's session disk (restore, per-call sandboxes) instead of a fresh one */
  sameDiskAs?: SandboxSpec;
  oneShot?: { argv: string[] };
  env?: Record<string, string>;
  network?: SandboxNetwork;
}

/** The host side of a driver under test. */
export interface ConformanceContext {
  driver: SandboxDriver;
  /** A spec with a new sandboxId and state dir, on a fresh (or the given) session disk, its volumes in the driver's forms. */
  newSpec(options?: SpecOptions): Promise<SandboxSpec>;
  /**
   * Host directory that is /workspace inside the sandboxes of `spec`, for drivers whose disk the host
   * sees live (`capabilities.sharedDisk`); absent otherwise (a VM's disk is inside its guest).
   */
  workspaceHostDir?(spec: SandboxSpec): string;
  /** A host path for a checkpoint image that does not exist yet. */
  newImageDir(): Promise<string>;
  /** A file that exists on the host only; sandboxes must not see it. */
  hostSecret: { path: string; content: string };
  /** Host resources of the sandbox that still exist (processes, cgroups, runtime state, mounts); [] when none. */
  leftovers(sandboxId: string): Promise<string[]>;
  /** Paths inside a sandbox that lead to the driver's channel to its agent; no session process may reach them. */
  agentChannelPaths?: string[];
  /** A fingerprint of the image rootfs; it must never change. */
  imageFingerprint(): Promise<string>;
  /** Releases everything the context made; called once after the suite. */
  dispose(): Promise<void>;
  /** Why this driver runs no commands (a fake answering from a handler): every case that needs a process skips, saying so. */
  runsNoCommands?: string;
  /**
   * An IPv4 subnet (e.g. 10.213.64.0/20) the networking case may give its sandbox; the host side is a
   * namespace the driver makes. Absent: the case skips.
   */
  networkSubnet?: string;
}

/** Skips a case that runs commands on a driver that runs none; true when it skipped. */
export function skipWithoutCommands(context: ConformanceContext, t: TestContext): boolean {
  if (context.runsNoCommands === undefined) return false;
  t.skip(context.runsNoCommands);
  return true;
}

/** Default resources of conformance sandboxes. */
export const DEFAULT_RESOURCES: SandboxResources = { cpus: 1, memoryMb: 256, maxProcesses: 128, diskMb: 256 };

/** A finished command with its output as text. */
export interface CommandResult extends ExecOutcome {
  stdout: string;
  stderr: string;
}

/** Runs `sh -c script` in the sandbox and collects its output. */
export async function sh(
  driver: SandboxDriver,
  handle: SandboxHandle,
  script: string,
  options: Partial<Omit<ExecRequest, 'argv' | 'onStdout' | 'onStderr'>> = {},
): Promise<CommandResult> {
  return run(driver, handle, ['sh', '-c', script], options);
}

/** Runs argv in the sandbox and collects its output. */
export async function run(
  driver: SandboxDriver,
  handle: SandboxHandle,
  argv: string[],
  options: Partial<Omit<ExecRequest, 'argv' | 'onStdout' | 'onStderr'>> = {},
): Promise<CommandResult> {
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  const outcome = await driver.exec(handle, {
    argv,
    cwd: options.cwd ?? '/',
    env: options.env ?? {},
    timeoutMs: options.timeoutMs ?? 30_000,
    ...(options.stdin ? { stdin: options.stdin } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    onStdout: (chunk) => stdout.push(chunk),
    onStderr: (chunk) => stderr.push(chunk),
  });
  return { ...outcome, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') };
}

/** Runs a script that must succeed and returns its trimmed stdout. */
export async function shOk(driver: SandboxDriver, handle: SandboxHandle, script: string): Promise<string> {
  const result = await sh(driver, handle, script);
  assert.equal(result.exitCode, 0, `script failed (${result.exitCode}): ${script}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  return result.stdout.trim();
}

/** Starts a sandbox, runs `body`, and destroys the sandbox whatever happens. */
export async function withSandbox<T>(
  context: ConformanceContext,
  options: SpecOptions,
  body: (handle: SandboxHandle, spec: SandboxSpec) => Promise<T>,
): Promise<T> {
  const spec = await context.newSpec(options);
  const handle = await context.driver.start(spec);
  try {
    return await body(handle, spec);
  } finally {
    await context.driver.destroy(handle);
  }
}

/** Polls `probe` until it returns a value that `accept` likes, or fails after `timeoutMs`. */
export async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await probe();
    if (accept(last)) return last;
    await sleep(200);
  }
  assert.fail(`${what}: still ${JSON.stringify(last)} after ${timeoutMs} ms`);
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A shell loop that writes an increasing counter to `file` every 0.2 s, started in the background; prints its pid. */
export function counterScript(file: string): string {
  return `i=0; while :; do i=$((i+1)); echo $i > ${file}; sleep 0.2; done </dev/null >/dev/null 2>&1 & echo $!`;
}

/** The pid from a `pid=N` line in mixed output (background printers interleave their lines). */
export function pidIn(output: string): string {
  const match = /pid=(\d+)/.exec(output);
  assert.ok(match?.[1], `no pid=N in output: ${output.slice(0, 200)}`);
  return match[1];
}

/**
 * Waits until nothing of the sandbox is left on the host. A driver may tear a one-shot sandbox down after
 * its command answered, off the caller's path: what it leaves must still go, within seconds.
 */
export async function assertGoneSoon(context: ConformanceContext, sandboxId: string, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const left = await context.leftovers(sandboxId);
    if (left.length === 0) return;
    assert.ok(Date.now() < deadline, `${what}: ${left.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
