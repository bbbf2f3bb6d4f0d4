/**
 * The HTTP connection to an Airlock server: base URL, bearer token, JSON in
 * and out, errors rebuilt from codes, and retries with backoff for requests
 * that are safe to repeat. Uses only `fetch`, so it runs in browsers and edge
 * runtimes as well as Node.
 */
import { AirlockConnectionError, errorFromBody } from './errors.js';

/** How to reach a server. Both default to AIRLOCK_URL and AIRLOCK_TOKEN from the environment. */
export interface ConnectionOptions {
  url?: string;
  token?: string;
  /** a custom fetch (tests, proxies) */
  fetch?: typeof fetch;
  /** attempts for idempotent requests when the server is unreachable (default 4) */
  retries?: number;
  /** extra headers on every request, e.g. a W3C `traceparent` so tool-call spans join your trace */
  headers?: Record<string, string>;
  /**
   * the WebSocket class for terminals (`sandbox.pty`): default the runtime's own. Node 20 has
   * none: pass `WebSocket` from the `ws` package, which also sends the bearer token
   */
  WebSocket?: WebSocketConstructor;
}

/** A WebSocket class: the browser's (which sends the page's cookies, not the token) or one taking headers, like `ws`. */
export type WebSocketConstructor = new (url: string, protocols?: string | string[], options?: { headers?: Record<string, string> }) => WebSocketLike;

/** The part of a WebSocket the SDK uses (the WHATWG interface, which `ws` also has). */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}

function fromEnvironment(name: string): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env?.[name];
}

/** A configured connection. */
export class Connection {
  readonly url: string;
  private readonly token: string;
  private readonly fetchImpl: typeof fetch;
  private readonly retries: number;
  private readonly headers: Record<string, string>;
  private readonly webSocketClass: WebSocketConstructor | undefined;

  constructor(options: ConnectionOptions = {}) {
    const url = options.url ?? fromEnvironment('AIRLOCK_URL') ?? 'http://127.0.0.1:7070';
    const token = options.token ?? fromEnvironment('AIRLOCK_TOKEN');
    if (!token) {
      throw new AirlockConnectionError('no API token: pass `token` or set AIRLOCK_TOKEN (the token is printed by `airlock serve` and stored in its data dir)');
    }
    this.url = url.replace(/\/+$/, '');
    this.token = token;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.retries = options.retries ?? 4;
    this.headers = options.headers ?? {};
    this.webSocketClass = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  }

  /** Opens a WebSocket to `path` with the bearer token (when the WebSocket class takes headers). */
  openSocket(path: string, protocol: string): WebSocketLike {
    if (!this.webSocketClass) {
      throw new AirlockConnectionError('this runtime has no WebSocket (Node 20): pass `WebSocket` from the `ws` package in the connection options, e.g. `Sandbox.connect(id, { WebSocket })`');
    }
    const url = `${this.url.replace(/^http/, 'ws')}${path}`;
    return new this.webSocketClass(url, protocol, { headers: { ...this.headers, authorization: `Bearer ${this.token}` } });
  }

  /** Sends a request and returns the raw response (for streams). Throws the server's error for 4xx/5xx. */
  async send(method: string, path: string, body?: unknown, init: { signal?: AbortSignal; headers?: Record<string, string> } = {}): Promise<Response> {
    const idempotent = method === 'GET' || method === 'HEAD' || method === 'DELETE';
    const attempts = idempotent ? this.retries : 1;
    let lastError: unknown;
    for (let attempt = 0; attempt < attempts; attempt += 1) {
      if (attempt > 0) await sleep(Math.min(200 * 2 ** (attempt - 1), 2000));
      let response: Response;
      try {
        const requestInit: RequestInit = {
          method,
          headers: { ...this.headers, ...init.headers, authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          ...(init.signal ? { signal: init.signal } : {}),
        };
        response = await this.fetchImpl(`${this.url}${path}`, requestInit);
      } catch (error) {
        if (init.signal?.aborted) throw error;
        lastError = error;
        continue;
      }
      if (response.status === 503 && idempotent && attempt + 1 < attempts) {
        lastError = new Error('server unavailable (503)');
        continue;
      }
      if (response.status >= 400) {
        const text = await response.text();
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = { error: { code: 'INTERNAL', message: text || response.statusText } };
        }
        throw errorFromBody(response.status, parsed);
      }
      return response;
    }
    throw new AirlockConnectionError(
      `cannot reach the Airlock server at ${this.url}${idempotent ? ` after ${attempts} attempts` : ''}: ${describe(lastError)}; start it with \`airlock serve\` or set AIRLOCK_URL`,
      { cause: lastError },
    );
  }

  /** Sends a request and parses the JSON answer. */
  async json<T>(method: string, path: string, body?: unknown, init: { signal?: AbortSignal } = {}): Promise<{ status: number; body: T }> {
    const response = await this.send(method, path, body, init);
    return { status: response.status, body: (await response.json()) as T };
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return cause?.code ?? cause?.message ?? error.message;
  }
  return String(error);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
