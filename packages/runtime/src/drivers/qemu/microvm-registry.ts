/**
 * The microVM driver's record of every VM it began to make: one JSON file per
 * sandbox under the driver's state root, written before anything exists on
 * the host and removed last by `destroy`. It holds what a restarted control
 * plane needs to reach the VM again (its sockets, its spec's environment)
 * and what `destroy` must remove when all it has is the sandbox id.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GuestMemory } from './qemu-command-line.js';

/** What the registry keeps of one VM. */
export interface RegisteredMachine {
  sandboxId: string;
  sessionId: string;
  /** the spec's state dir: console log, QEMU's log, the VM's initramfs and RAM file */
  stateDir: string;
  /** short directory of the VM's Unix sockets (socket paths are limited to 108 bytes) */
  runDir: string;
  /** the spec's environment: every command gets it under its own */
  env: Record<string, string>;
  /** where the guest RAM lives: it decides what a checkpoint writes (see qemu-command-line.ts) */
  memory: GuestMemory;
  cpus: number;
  memoryMb: number;
  /** the VM's network namespace and addresses, when it has a network */
  network?: { netnsPath: string; address: string; prefixLength: number; gateway: string };
  kernelDigest: string;
  kernelRelease: string;
  accelerator: string;
  registeredAt: string;
}

const SUFFIX = '.json';

/** The VMs this driver instance started to make and has not destroyed. */
export class MicrovmRegistry {
  constructor(private readonly dir: string) {}

  /** Records (or updates) a VM, atomically. */
  async put(entry: Omit<RegisteredMachine, 'registeredAt'> & { registeredAt?: string }): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const path = this.pathOf(entry.sandboxId);
    await writeFile(`${path}.tmp`, JSON.stringify({ ...entry, registeredAt: entry.registeredAt ?? new Date().toISOString() }));
    await rename(`${path}.tmp`, path);
  }

  /** The entry of a VM, or undefined when there is none or it is unreadable. */
  async get(sandboxId: string): Promise<RegisteredMachine | undefined> {
    try {
      const parsed = JSON.parse(await readFile(this.pathOf(sandboxId), 'utf8')) as Partial<RegisteredMachine>;
      if (typeof parsed.stateDir !== 'string' || typeof parsed.runDir !== 'string' || typeof parsed.sessionId !== 'string') return undefined;
      return parsed as RegisteredMachine;
    } catch {
      return undefined;
    }
  }

  /** Ids of every registered VM. */
  async list(): Promise<string[]> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    return names.filter((name) => name.endsWith(SUFFIX)).map((name) => name.slice(0, -SUFFIX.length));
  }

  /** Forgets a VM once everything of it is gone; idempotent. */
  async remove(sandboxId: string): Promise<void> {
    await rm(this.pathOf(sandboxId), { force: true });
    await rm(`${this.pathOf(sandboxId)}.tmp`, { force: true });
  }

  private pathOf(sandboxId: string): string {
    // Sandbox ids are validated (letters, digits, '.', '_', '-') before they get here.
    return join(this.dir, `${sandboxId}${SUFFIX}`);
  }
}
