/**
 * PostgreSQL that does not answer (stopped, restarting, failing over, a
 * network fault) as the one error every caller knows: STORE_UNAVAILABLE
 * (503), with a message saying to retry. Anything else (a constraint, a bad
 * query, a refused setting) is left as it is.
 */
import { AirlockError } from '../../core/errors.js';

/** Socket errors of a connection that could not be made or was lost. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);
/**
 * SQLSTATEs of a server going away: class 08 (connection exception), 57P01
 * admin_shutdown (`pg_ctl stop -m fast`), 57P02 crash_shutdown (another
 * backend crashed), 57P03 cannot_connect_now (starting up, shutting down,
 * recovering).
 */
const SERVER_GONE_STATES = new Set(['57P01', '57P02', '57P03']);
/** What node-postgres says when the socket ended under a query, or a connection could not be had in time. */
const LOST_MESSAGES = [
  /^Connection terminated/i,
  /^timeout exceeded when trying to connect/i,
  /Client has encountered a connection error and is not queryable/i,
  /^Client was closed and is not queryable/i,
];

/** True when `error` says the database cannot be reached now (as opposed to refusing what was asked). */
export function isConnectionLost(error: unknown): boolean {
  if (error instanceof AirlockError) return error.code === 'STORE_UNAVAILABLE';
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || SERVER_GONE_STATES.has(code) || code.startsWith('08'))) return true;
  // An AggregateError (every address of a host name refused) carries its causes.
  const errors = (error as { errors?: unknown }).errors;
  if (Array.isArray(errors) && errors.length > 0 && errors.every(isConnectionLost)) return true;
  return typeof message === 'string' && LOST_MESSAGES.some((pattern) => pattern.test(message));
}

/** `error` as STORE_UNAVAILABLE when the database could not be reached; otherwise `error` unchanged. */
export function storeError(error: unknown): unknown {
  if (error instanceof AirlockError || !isConnectionLost(error)) return error;
  const detail = error instanceof Error ? error.message || (error as { code?: string }).code || error.name : String(error);
  return new AirlockError('STORE_UNAVAILABLE', `the PostgreSQL store is unavailable (${detail}); retry once the database is back`, {
    cause: error,
  });
}
