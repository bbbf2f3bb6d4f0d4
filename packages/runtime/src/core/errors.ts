/**
 * The one error root of Airlock. Every failure that crosses a boundary is an
 * AirlockError with a stable string `code`; adapters translate foreign errors
 * (runsc exit codes, SQLITE_BUSY, ENOSPC) into one of these. The HTTP status of
 * each code lives in one table (`ERROR_STATUS`), never at the throw site.
 */

/** Every stable error code the product emits. Extend, never rename. */
export const ERROR_STATUS = {
  INVALID_ARGUMENTS: 400,
  INVALID_REQUEST: 400,
  INVALID_CONTRACT: 400,
  UNAUTHORIZED: 401,
  LOGIN_EXPIRED: 401,
  CSRF_REJECTED: 403,
  ORIGIN_FORBIDDEN: 403,
  HOST_FORBIDDEN: 403,
  POLICY_DENIED: 403,
  FILE_ACCESS_DENIED: 403,
  ROLE_FORBIDDEN: 403,
  APPROVAL_DENIED: 403,
  APPROVAL_EXPIRED: 403,
  RUNAWAY_DETECTED: 429,
  BUDGET_EXCEEDED: 429,
  QUOTA_EXCEEDED: 429,
  NOT_FOUND: 404,
  SESSION_NOT_FOUND: 404,
  IMAGE_NOT_FOUND: 404,
  SNAPSHOT_NOT_FOUND: 404,
  APPROVAL_NOT_FOUND: 404,
  SECRET_NOT_FOUND: 404,
  TOKEN_NOT_FOUND: 404,
  WEBHOOK_NOT_FOUND: 404,
  FILE_NOT_FOUND: 404,
  INVALID_STATE: 409,
  SESSION_BUSY: 409,
  SESSION_DEGRADED: 409,
  SESSION_NOT_OWNED: 409,
  LEASE_LOST: 409,
  NODE_LOST: 409,
  WRITE_CONFLICT: 409,
  DESKTOP_UNAVAILABLE: 409,
  SCREEN_CHANGED: 409,
  APPROVAL_ALREADY_DECIDED: 409,
  IMAGE_EXISTS: 409,
  FILE_EXISTS: 409,
  FILE_CHANGED: 409,
  SANDBOX_INCOMPATIBLE: 409,
  AUDIT_CHAIN_TRUNCATED: 409,
  EDIT_NO_MATCH: 422,
  EDIT_AMBIGUOUS: 422,
  NOT_A_DIRECTORY: 422,
  IS_A_DIRECTORY: 422,
  PAYLOAD_TOO_LARGE: 413,
  INVALID_IMAGE: 422,
  SNAPSHOT_CORRUPT: 422,
  SNAPSHOT_INCOMPATIBLE: 422,
  DISK_FULL: 507,
  PORT_UNREACHABLE: 502,
  NOT_AVAILABLE: 501,
  DRIVER_UNAVAILABLE: 503,
  OBJECT_STORAGE_UNAVAILABLE: 503,
  NODE_UNREACHABLE: 503,
  DRIVER_FAILED: 500,
  SANDBOX_DIED: 500,
  SANDBOX_NOT_ANSWERING: 503,
  AUDIT_UNAVAILABLE: 503,
  STORE_UNAVAILABLE: 503,
  /** the installation's own settings are wrong (a key, a store URL, a flag): the operator fixes them, nothing is a bug */
  INVALID_CONFIGURATION: 500,
  INTERNAL: 500,
} as const;

/** A stable error code. */
export type ErrorCode = keyof typeof ERROR_STATUS;

/** Options of an AirlockError beyond its code and message. */
export interface AirlockErrorOptions {
  cause?: unknown;
  details?: Record<string, unknown>;
}

/** The root of every error Airlock raises on purpose. The message says what to do. */
export class AirlockError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options: AirlockErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AirlockError';
    this.code = code;
    this.details = options.details ?? {};
  }

  /** The HTTP status that this error maps to. */
  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

/** True when `value` is an AirlockError (optionally of the given code). */
export function isAirlockError(value: unknown, code?: ErrorCode): value is AirlockError {
  return value instanceof AirlockError && (code === undefined || value.code === code);
}

/** Wraps anything thrown into an AirlockError, keeping AirlockErrors as they are. */
export function toAirlockError(value: unknown, fallback: ErrorCode = 'INTERNAL'): AirlockError {
  if (value instanceof AirlockError) return value;
  const message = value instanceof Error ? value.message : String(value);
  return new AirlockError(fallback, message, { cause: value });
}
