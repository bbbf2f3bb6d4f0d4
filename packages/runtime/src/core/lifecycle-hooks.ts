/**
 * Lifecycle hooks: executables the image (or the agent) puts in
 * `/etc/airlock/hooks/<phase>.d/` run inside the machine right after a fork
 * (`on-fork`) or a resume from a snapshot (`on-resume`), in name order, like
 * run-parts. They exist because a restored machine carries the memory of its
 * snapshot: a program's own random generator, caches and connections are the
 * same in every branch, and only the program can reseed them (see
 * docs/fork.md). Each hook's exit code and output go to the audit log; a
 * failing hook is recorded, never fatal to the machine.
 */
import { randomBytes } from 'node:crypto';
import type { SandboxHandle } from './sandbox-driver.js';
import type { SandboxDrivers } from './sandbox-drivers.js';
import type { Store } from './store.js';
import type { AuditLog } from '../audit/audit-log.js';
import { isAirlockError, toAirlockError } from './errors.js';
import { desktopSize } from './desktop-size.js';
import type { SessionContract } from './session-contract.js';

/** When hooks run: after a fresh start (`on-start`: the desktop image starts its display here), a fork or a resume. */
export type HookPhase = 'on-start' | 'on-fork' | 'on-resume';

/** Directory of the hooks of each phase inside the machine. */
export const HOOKS_ROOT = '/etc/airlock/hooks';

/** 256 bits of host randomness as hex, for a hook's seed variable. */
export function freshSeed(): string {
  return randomBytes(32).toString('hex');
}

/** What one hook did. */
export interface HookResult {
  path: string;
  exitCode: number;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/** Options of LifecycleHooks. */
export interface LifecycleHooksOptions {
  drivers: SandboxDrivers;
  store: Store;
  audit: AuditLog;
  /** per hook; default 30 s */
  timeoutMs?: number;
  /** bytes of stdout and of stderr kept in the audit record; default 4 KiB */
  outputLimit?: number;
}

/** Finds and runs the hooks of a phase in a machine, recording each in the audit log. */
export class LifecycleHooks {
  private readonly drivers: SandboxDrivers;
  private readonly store: Store;
  private readonly audit: AuditLog;
  private readonly timeoutMs: number;
  private readonly outputLimit: number;

  constructor(options: LifecycleHooksOptions) {
    this.drivers = options.drivers;
    this.store = options.store;
    this.audit = options.audit;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.outputLimit = options.outputLimit ?? 4096;
  }

  /** Runs every hook of `phase` with `env` added to its environment; never throws. */
  async run(handle: SandboxHandle, sessionId: string, phase: HookPhase, env: Record<string, string>): Promise<HookResult[]> {
    const dir = `${HOOKS_ROOT}/${phase}.d`;
    const results: HookResult[] = [];
    try {
      const hooks = await this.find(handle, dir);
      for (const path of hooks) {
        const result = await this.runOne(handle, path, { ...env, AIRLOCK_HOOK: phase });
        results.push(result);
        await this.audit.appendNow(this.store, { sessionId, type: 'hook.executed', data: { phase, ...result } });
      }
    } catch (error) {
      const failure = toAirlockError(error, 'DRIVER_FAILED');
      await this.audit.appendNow(this.store, { sessionId, type: 'hook.failed', data: { phase, code: failure.code, message: failure.message } }).catch(() => undefined);
    }
    return results;
  }

  /** Regular executable files of `dir` (or links to them), in name order; none when it does not exist. */
  private async find(handle: SandboxHandle, dir: string): Promise<string[]> {
    const entries = await this.drivers.forHandle(handle).files.list(handle, dir).catch((error: unknown) => {
      if (isAirlockError(error, 'FILE_NOT_FOUND') || isAirlockError(error, 'NOT_A_DIRECTORY')) return [];
      throw error;
    });
    const hooks: string[] = [];
    for (const entry of entries) {
      const info = entry.type === 'symlink' ? await this.drivers.forHandle(handle).files.stat(handle, entry.path, { followLast: true }).catch(() => undefined) : entry;
      if (info?.type === 'file' && (Number.parseInt(info.mode, 8) & 0o111) !== 0) hooks.push(entry.path);
    }
    return hooks;
  }

  private async runOne(handle: SandboxHandle, path: string, env: Record<string, string>): Promise<HookResult> {
    const stdout = new BoundedText(this.outputLimit);
    const stderr = new BoundedText(this.outputLimit);
    const outcome = await this.drivers.forHandle(handle).exec(handle, {
      argv: [path],
      cwd: '/',
      env,
      timeoutMs: this.timeoutMs,
      onStdout: (chunk) => stdout.add(chunk),
      onStderr: (chunk) => stderr.add(chunk),
    });
    return { path, exitCode: outcome.exitCode, timedOut: outcome.timedOut, stdout: stdout.text(), stderr: stderr.text(), durationMs: outcome.durationMs };
  }
}

/** Keeps the first `limit` bytes of a stream as text. */
class BoundedText {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private truncated = false;

  constructor(private readonly limit: number) {}

  add(chunk: Buffer): void {
    const room = this.limit - this.size;
    if (room <= 0) {
      this.truncated = true;
      return;
    }
    if (chunk.length > room) this.truncated = true;
    const kept = chunk.subarray(0, room);
    this.chunks.push(kept);
    this.size += kept.length;
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8') + (this.truncated ? '\n[truncated]' : '');
  }
}

/** What on-start hooks learn from the contract: the display size a desktop image starts with. */
export function startEnvironment(contract: SessionContract): Record<string, string> {
  const { width, height } = desktopSize({ contract });
  return { AIRLOCK_DESKTOP_WIDTH: String(width), AIRLOCK_DESKTOP_HEIGHT: String(height) };
}
