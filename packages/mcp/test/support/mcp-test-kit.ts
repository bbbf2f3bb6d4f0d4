/**
 * Helpers of the MCP tests: the real installation from the CLI's tests
 * (imported by package path, which resolves the same from test/ and from
 * dist/test/), the example contract, and small readers of tool results.
 */
import { fileURLToPath } from 'node:url';
import { dirname, resolve } from 'node:path';

export { TestInstallation, AIRLOCK_BIN } from '@airlock/cli/dist/test/support/test-installation.js';

/** The repository root (this file runs from packages/mcp/dist/test/support). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../../..');
/** The contract that forbids rm and holds tar for approval. */
export const CONTRACT = resolve(REPO_ROOT, 'examples/contracts/no-rm-approve-tar.json');

/** The text of a tool result. */
export function textOf(result: object): string {
  return (((result as { content?: unknown }).content ?? []) as { type: string; text?: string }[]).map((part) => part.text ?? '').join('\n');
}

/** Polls until `probe` returns a value. */
export async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Environment variables as the MCP stdio transport wants them (no undefined values). */
export function definedEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
