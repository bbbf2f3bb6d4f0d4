/**
 * The driver's own record of every sandbox it began to make: one small file
 * per sandbox under the driver's state root, written before anything else
 * exists on the host (state dir, rootfs view mount, netns, runsc container)
 * and removed last by `destroy`. A crash at any point of a start, restore or
 * one-shot run therefore leaves an entry, and `destroy(sandboxId)` finds the
 * sandbox's files from the id alone: the caller never has to have stored the
 * handle (a session killed mid-create has none).
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** What the registry keeps of one sandbox. */
export interface RegisteredSandbox {
  sandboxId: string;
  sessionId: string;
  stateDir: string;
  diskDir: string;
  registeredAt: string;
}

const ENTRY_SUFFIX = '.json';

/** The sandboxes this driver instance started to make and has not destroyed. */
export class SandboxRegistry {
  constructor(private readonly dir: string) {}

  /** Records a sandbox before any of its host state is made (atomic write). */
  async register(entry: Omit<RegisteredSandbox, 'registeredAt'>): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const path = this.pathOf(entry.sandboxId);
    const temporary = `${path}.tmp`;
    await writeFile(temporary, JSON.stringify({ ...entry, registeredAt: new Date().toISOString() }));
    await rename(temporary, path);
  }

  /** The entry of a sandbox, or undefined when there is none (or it is unreadable). */
  async get(sandboxId: string): Promise<RegisteredSandbox | undefined> {
    try {
      const parsed = JSON.parse(await readFile(this.pathOf(sandboxId), 'utf8')) as Partial<RegisteredSandbox>;
      if (typeof parsed.stateDir !== 'string' || typeof parsed.diskDir !== 'string' || typeof parsed.sessionId !== 'string') return undefined;
      return { sandboxId, sessionId: parsed.sessionId, stateDir: parsed.stateDir, diskDir: parsed.diskDir, registeredAt: String(parsed.registeredAt ?? '') };
    } catch {
      return undefined;
    }
  }

  /** Ids of every registered sandbox. */
  async list(): Promise<string[]> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    return names.filter((name) => name.endsWith(ENTRY_SUFFIX)).map((name) => name.slice(0, -ENTRY_SUFFIX.length));
  }

  /** Forgets a sandbox once everything of it is gone; idempotent. */
  async remove(sandboxId: string): Promise<void> {
    await rm(this.pathOf(sandboxId), { force: true });
    await rm(`${this.pathOf(sandboxId)}.tmp`, { force: true });
  }

  private pathOf(sandboxId: string): string {
    // Sandbox ids are validated (letters, digits, '.', '_', '-') before they get here.
    return join(this.dir, `${sandboxId}${ENTRY_SUFFIX}`);
  }
}
