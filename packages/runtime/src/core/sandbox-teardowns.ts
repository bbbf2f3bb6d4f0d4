/**
 * Sandboxes destroyed off the caller's path. Once a suspended machine's image
 * is sealed and recorded, nothing waits on its old sandbox: its teardown
 * (~3 s of `runsc delete` and process reaping, measured) runs in the
 * background, a few at a time, so that a burst of suspends does not take the
 * host's cores from the calls. A crash meanwhile leaves a sandbox no
 * session's record holds, which the reconciler removes at the next start.
 */
import type { SandboxDriver, SandboxHandle } from './sandbox-driver.js';

/** Teardowns running at once; the rest wait their turn. */
const CONCURRENT_TEARDOWNS = 4;

/** Background destruction of sandboxes nobody uses any more. */
export class SandboxTeardowns {
  private readonly queue: { driver: SandboxDriver; handle: SandboxHandle }[] = [];
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly onError?: (what: string, error: unknown) => void) {}

  /** Queues the sandbox for destruction and returns at once. */
  start(driver: SandboxDriver, handle: SandboxHandle): void {
    this.queue.push({ driver, handle });
    this.next();
  }

  /** Teardowns begun or waiting. */
  get pending(): number {
    return this.running.size + this.queue.length;
  }

  /** Waits until every teardown queued so far has ended (shutdown, tests, benchmarks). */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  private next(): void {
    while (this.running.size < CONCURRENT_TEARDOWNS) {
      const item = this.queue.shift();
      if (!item) return;
      const teardown: Promise<void> = item.driver
        .destroy(item.handle)
        .catch((error: unknown) => this.onError?.(`tearing down sandbox ${item.handle.sandboxId}`, error))
        .finally(() => {
          this.running.delete(teardown);
          this.next();
        });
      this.running.add(teardown);
    }
  }
}
