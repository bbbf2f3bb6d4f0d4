/**
 * The server's log: one JSON object per line on stdout, for an operator's log
 * shipper. Callers pass the fields they choose; nothing here reads a request,
 * so a credential, a secret or an environment value can only reach a line if
 * a caller puts it there (request lines carry the matched route, never the URL,
 * a header or a body).
 */

/** How much is logged: each level includes the ones after it. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'off';

/** Every level, most verbose first. */
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'off'];

const RANK: Readonly<Record<LogLevel, number>> = { debug: 10, info: 20, warn: 30, error: 40, off: 100 };

/** Where lines go (process.stdout by default; tests pass their own). */
export interface LogSink {
  write(line: string): unknown;
}

/** Tells whether a text names a log level. */
export function isLogLevel(text: string): text is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(text);
}

/** A leveled JSON-lines log. */
export class JsonLog {
  constructor(
    readonly level: LogLevel = 'info',
    private readonly sink: LogSink = process.stdout,
  ) {}

  /** Whether a line of this level would be written. */
  enabled(level: Exclude<LogLevel, 'off'>): boolean {
    return RANK[level] >= RANK[this.level];
  }

  /** Writes one line: `{"time", "level", "event", ...fields}`. Never throws. */
  write(level: Exclude<LogLevel, 'off'>, event: string, fields: Record<string, unknown> = {}): void {
    if (!this.enabled(level)) return;
    try {
      this.sink.write(`${JSON.stringify({ time: new Date().toISOString(), level, event, ...fields })}\n`);
    } catch {
      // A log that cannot be written must not take a request or the server down with it.
    }
  }
}

/** An error as a log line carries it: code, message, and the chain of causes (messages, no stacks of foreign values). */
export function loggedError(error: unknown): Record<string, unknown> {
  const causes: string[] = [];
  let cause = error instanceof Error ? error.cause : undefined;
  for (let depth = 0; cause !== undefined && depth < 5; depth += 1) {
    causes.push(cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause));
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  const code = (error as { code?: unknown } | null)?.code;
  return {
    ...(typeof code === 'string' ? { code } : {}),
    message: error instanceof Error ? error.message : String(error),
    ...(causes.length > 0 ? { causes } : {}),
    ...(error instanceof Error && error.stack ? { stack: error.stack.split('\n').slice(0, 8).join('\n') } : {}),
  };
}
