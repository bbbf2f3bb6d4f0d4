/** Waiting for a condition in tests, instead of sleeping for a fixed time. */
import assert from 'node:assert/strict';

/** Resolves once `condition` holds (checked every few milliseconds), or fails after `timeoutMs`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) assert.fail(`${what} never became true within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
