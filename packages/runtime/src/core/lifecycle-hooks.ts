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
import { toAirlockError } from './errors.js';

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

// Lists regular executable files, in the shell's (sorted) glob order; builtins only.
const LIST_SCRIPT = 'for f in "$1"/*; do [ -f "$f" ] && [ -x "$f" ] && echo "$f"; done; exit 0';

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
      let listing = '';
      // transient: the listing leaves nothing behind, so the driver's fast path is safe.
      const driver = this.drivers.forHandle(handle);
      const listed = await driver.exec(handle, {
        argv: [driver.toolboxPath, 'sh', '-c', LIST_SCRIPT, 'airlock-hooks', dir],
        cwd: '/',
        env: {},
        timeoutMs: 10_000,
        transient: true,
        onStdout: (chunk) => (listing += chunk.toString()),
      });
      if (listed.exitCode !== 0) throw new Error(`listing ${dir} exited with ${listed.exitCode}`);
      const hooks = listing.split('\n').filter((line) => line.startsWith(`${dir}/`) && !line.slice(dir.length + 1).includes('/'));
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

  private async runOne(handle: SandboxHandle, path: string, env: Record<string, string>): Promise<HookResult> {
    const stdout = new BoundedText(this.outputLimit);
    const stderr = new BoundedText(this.outputLimit);
    // Not transient: a hook may (re)start a background process, which must survive later checkpoints.
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
