/**
 * Sandboxes destroyed off the caller's path. Once a suspended machine's image
 * is sealed and recorded, nothing waits on its old sandbox: its teardown
 * (~3 s of `runsc delete` and process reaping on an idle host, measured) runs
 * in the background, a few at a time, so that a burst of suspends does not
 * take the host's cores from the calls. A sandbox waiting for its teardown
 * still holds its memory, so when teardowns fall behind (a burst of
 * suspends: 500 waited at once, ~16 GB, measured) the caller waits for its
 * own instead. A crash meanwhile leaves a sandbox no session's record holds,
 * which the reconciler removes at the next start.
 */
import type { SandboxDriver, SandboxHandle } from './sandbox-driver.js';

/** Teardowns running at once; the rest wait their turn. */
const CONCURRENT_TEARDOWNS = 4;
/** Teardowns begun or waiting beyond which a caller waits for its own. */
const MAX_PENDING_TEARDOWNS = 8;

interface Teardown {
  driver: SandboxDriver;
  handle: SandboxHandle;
  done: () => void;
}

/** Background destruction of sandboxes nobody uses any more. */
export class SandboxTeardowns {
  private readonly queue: Teardown[] = [];
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly onError?: (what: string, error: unknown) => void) {}

  /**
   * Destroys the sandbox in the background and returns at once, or, while too many teardowns are
   * pending, once this one has ended. Never throws: a failed teardown is reported, and the sandbox is
   * an orphan for the reconciler.
   */
  async release(driver: SandboxDriver, handle: SandboxHandle): Promise<void> {
    const ended = new Promise<void>((resolve) => this.queue.push({ driver, handle, done: resolve }));
    const behind = this.pending > MAX_PENDING_TEARDOWNS;
    this.next();
    if (behind) await ended;
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
          item.done();
          this.next();
        });
      this.running.add(teardown);
    }
  }
}
