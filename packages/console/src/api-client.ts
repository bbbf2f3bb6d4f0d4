/**
 * Calls to the Airlock API from the console: same origin, authenticated by
 * the login cookie, with the login's CSRF header on every state-changing
 * request. An error keeps the API's stable code, and a refused tool call
 * keeps the policy's reason, so a page can say what happened and why.
 */

/** An error answered by the API (or a network failure, code NETWORK). */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The reason of the policy decision behind a refusal, when there was one. */
  get policyReason(): string | null {
    const decision = this.details['decision'] as { reason?: string; policyIds?: string[] } | null | undefined;
    return decision?.reason ? decision.reason : null;
  }

  /** The ids of the policies that decided a refusal. */
  get policyIds(): string[] {
    const decision = this.details['decision'] as { policyIds?: string[] } | null | undefined;
    return decision?.policyIds ?? [];
  }
}

let csrfToken: string | null = null;
let onLoginLost: (error: ApiError) => void = () => {};

/** Remembers the CSRF token of the current login (from POST /v1/login or GET /v1/whoami). */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** What to do when the API says the login is gone (expired, ended, or never was). */
export function whenLoginLost(handler: (error: ApiError) => void): void {
  onLoginLost = handler;
}

/** True for the errors that mean "log in again". */
export function isLoginLost(error: unknown): error is ApiError {
  return error instanceof ApiError && (error.code === 'LOGIN_EXPIRED' || error.code === 'UNAUTHORIZED');
}

/** Options of one call. */
export interface CallOptions {
  signal?: AbortSignal;
  /** do not treat a 401 as a lost login (the login form itself) */
  quiet401?: boolean;
}

/** One JSON call. Non-2xx answers throw ApiError; 202 (a held call) resolves with its body. */
export async function api<T>(method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD' && csrfToken) headers['x-airlock-csrf'] = csrfToken;
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw error;
    throw new ApiError('NETWORK', 'the server did not answer; is `airlock serve` running?', 0);
  }
  const text = await response.text();
  const parsed: unknown = text.length > 0 ? safeJson(text) : undefined;
  if (response.ok) return parsed as T;
  const error = (parsed as { error?: { code?: string; message?: string; details?: Record<string, unknown> } } | undefined)?.error;
  const failure = new ApiError(error?.code ?? `HTTP_${response.status}`, error?.message ?? `${method} ${path} answered ${response.status}`, response.status, error?.details ?? {});
  if (response.status === 401 && !options.quiet401) onLoginLost(failure);
  throw failure;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return { error: { code: 'INVALID_RESPONSE', message: text.slice(0, 200) } };
  }
}

/** The path of a session route. */
export function sessionPath(sessionId: string, rest = ''): string {
  return `/v1/sessions/${encodeURIComponent(sessionId)}${rest}`;
}
