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

/** The text of a tool result meant for the model (its first text block). */
export function textOf(result: object): string {
  return textBlocks(result)[0] ?? '';
}

/** Every text block of a tool result (a result with structured content carries it as JSON in the last one). */
export function textBlocks(result: object): string[] {
  return (((result as { content?: unknown }).content ?? []) as { type: string; text?: string }[]).filter((part) => part.type === 'text').map((part) => part.text ?? '');
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

/**
 * A `fetch` for the MCP client whose tool-call streams a test can cut, as a
 * network failure would (the socket is destroyed; the server sees the
 * connection close), and which records the `Last-Event-ID` of every request.
 */
export class DroppableFetch {
  /** the Last-Event-ID header of each request that carried one */
  readonly resumedFrom: string[] = [];
  private readonly calls = new Set<AbortController>();

  readonly fetch: typeof fetch = async (input, init = {}) => {
    const controller = new AbortController();
    const outer = init.signal;
    if (outer?.aborted) controller.abort();
    outer?.addEventListener('abort', () => controller.abort(), { once: true });
    const last = new Headers(init.headers).get('last-event-id');
    if (last) this.resumedFrom.push(last);
    if (typeof init.body === 'string' && init.body.includes('"method":"tools/call"')) this.calls.add(controller);
    return fetch(input, { ...init, signal: controller.signal });
  };

  /** Cuts the connections of every tool call made so far. */
  dropCalls(): void {
    for (const controller of this.calls) controller.abort(new Error('connection dropped by the test'));
    this.calls.clear();
  }
}

/** One HTTP request with full control of its headers (Host included), answered as status and parsed JSON. */
export async function rawRequest(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; headers: import('node:http').IncomingHttpHeaders; text: string; json: unknown }> {
  const { request } = await import('node:http');
  return new Promise((resolvePromise, reject) => {
    const outgoing = request(url, { method: options.method ?? 'GET', headers: options.headers ?? {}, agent: false }, (incoming) => {
      let text = '';
      incoming.setEncoding('utf8');
      incoming.on('data', (chunk: string) => (text += chunk));
      incoming.on('end', () => {
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolvePromise({ status: incoming.statusCode ?? 0, headers: incoming.headers, text, json });
      });
    });
    outgoing.once('error', reject);
    outgoing.end(options.body);
  });
}
