/**
 * Sandboxes destroyed off the caller's path. Once a suspended machine's image
 * is sealed and recorded, nothing waits on its old sandbox: its teardown
 * (~3 s of `runsc delete` and process reaping, measured) runs in the
 * background. A crash meanwhile leaves a sandbox no session's record holds,
 * which the reconciler removes at the next start.
 */
import type { SandboxDriver, SandboxHandle } from './sandbox-driver.js';

/** Background destruction of sandboxes nobody uses any more. */
export class SandboxTeardowns {
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly onError?: (what: string, error: unknown) => void) {}

  /** Begins destroying the sandbox and returns at once. */
  start(driver: SandboxDriver, handle: SandboxHandle): void {
    const teardown = driver
      .destroy(handle)
      .catch((error: unknown) => this.onError?.(`tearing down sandbox ${handle.sandboxId}`, error))
      .finally(() => this.pending.delete(teardown));
    this.pending.add(teardown);
  }

  /** Teardowns still running. */
  get running(): number {
    return this.pending.size;
  }

  /** Waits until every teardown begun so far has ended (shutdown, tests). */
  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }
}
