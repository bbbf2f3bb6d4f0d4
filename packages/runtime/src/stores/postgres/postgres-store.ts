/**
 * The shared store: PostgreSQL through node-postgres, with a connection pool,
 * migrations applied at start, row locks (`FOR UPDATE`) under every
 * compare-and-set, and a change feed over LISTEN/NOTIFY so that servers
 * sharing the database hear each other's approvals and audit appends. A
 * transaction that loses a deadlock or a serialization check is retried whole.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Store, StoreChange, StoreTransaction } from '../../core/store.js';
import { AirlockError } from '../../core/errors.js';
import { ChangeListeners, CommitEffects, outermost } from '../store-changes.js';
import { PostgresReads } from './postgres-reads.js';
import { PostgresTransaction } from './postgres-transaction.js';
import { POSTGRES_MIGRATIONS } from './schema.js';
import { isConnectionLost, storeError } from './postgres-errors.js';

/** The NOTIFY channel of committed changes. */
export const CHANGE_CHANNEL = 'airlock_changes';
const MAX_ATTEMPTS = 5;
const RETRYABLE = new Set(['40001', '40P01']);
const MAX_PAYLOAD = 7000;
/** A call waits this long for a connection, then fails with STORE_UNAVAILABLE instead of hanging on a database that does not answer. */
const CONNECT_TIMEOUT_MS = 10_000;

/** Options of the PostgreSQL store. */
export interface PostgresStoreOptions {
  /** connections in the pool; default 10 */
  poolSize?: number;
  /** hear other servers' changes (LISTEN); default true */
  listen?: boolean;
}

/** The URL with any password hidden, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(an unparsable URL)';
  }
}

/** Store on PostgreSQL. */
export class PostgresStore extends PostgresReads implements Store {
  readonly kind = 'postgres' as const;
  private readonly listeners = new ChangeListeners();
  // Tells this process's own notifications apart from other servers'.
  private readonly origin = randomBytes(8).toString('hex');
  private listener: pg.Client | undefined;
  private reconnect: NodeJS.Timeout | undefined;
  private closed = false;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
    private readonly options: PostgresStoreOptions,
  ) {
    // Every read (and every write the subclasses add) reports a database that does not answer as STORE_UNAVAILABLE.
    super({ query: (text, values) => pool.query(text, values).catch((error: unknown) => Promise.reject(storeError(error))) });
  }

  /** Connects, applies migrations and starts hearing changes. */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    // An idle client's error (the server restarted) must not crash the process: the next query reconnects.
    pool.on('error', () => undefined);
    const store = new PostgresStore(pool, url, options);
    try {
      await store.migrate();
      if (options.listen ?? true) await store.startListening();
    } catch (error) {
      await pool.end().catch(() => undefined);
      if (error instanceof AirlockError) throw error;
      throw new AirlockError(
        unreachable(error) ? 'STORE_UNAVAILABLE' : 'INVALID_CONFIGURATION',
        `cannot use the PostgreSQL store at ${redactUrl(url)}: ${(error as Error).message}; check --store (postgres://USER@HOST:PORT/DB) and that the server accepts the connection`,
        {
          cause: error,
        },
      );
    }
    return store;
  }

  private async migrate(): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query("SELECT pg_advisory_xact_lock(hashtext('airlock-migrations'))");
      await client.query('CREATE TABLE IF NOT EXISTS airlock_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())');
      const { rows } = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM airlock_migrations');
      const current = rows[0]?.version ?? 0;
      if (current > POSTGRES_MIGRATIONS.length) {
        throw new AirlockError(
          'INVALID_CONFIGURATION',
          `the database schema (v${current}) is newer than this Airlock (v${POSTGRES_MIGRATIONS.length}); upgrade Airlock`,
        );
      }
      for (let index = current; index < POSTGRES_MIGRATIONS.length; index += 1) {
        await client.query(POSTGRES_MIGRATIONS[index] ?? '');
        await client.query('INSERT INTO airlock_migrations (version) VALUES ($1)', [index + 1]);
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  transaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return outermost(async () => {
      for (let attempt = 1; ; attempt += 1) {
        if (this.closed) throw new AirlockError('INTERNAL', 'the store is closed');
        const client = await this.pool.connect().catch((error: unknown) => Promise.reject(storeError(error)));
        // A connection lost while this transaction holds it (between two queries) is an error event, not a rejection: heard here, it fails the next query instead of the process.
        client.on('error', ignoreLostConnection);
        const effects = new CommitEffects();
        const tx = new PostgresTransaction(client, effects);
        let broken: Error | undefined;
        try {
          await client.query('BEGIN');
          const result = await work(tx);
          tx.finish();
          // The notifications ride with the COMMIT (one round trip): NOTIFY is delivered only if it commits.
          await client.query(`${this.notifications(effects.changes)}COMMIT`);
          client.removeListener('error', ignoreLostConnection);
          client.release();
          effects.committed(this.listeners);
          return result;
        } catch (error) {
          tx.finish();
          try {
            await client.query('ROLLBACK');
          } catch (rollbackError) {
            broken = rollbackError as Error;
          }
          client.removeListener('error', ignoreLostConnection);
          // A client whose connection is lost is destroyed, never handed to the next call.
          client.release(broken ?? (isConnectionLost(error) ? (error as Error) : undefined));
          const code = (error as { code?: unknown }).code;
          if (typeof code === 'string' && RETRYABLE.has(code) && attempt < MAX_ATTEMPTS) continue;
          throw storeError(error);
        }
      }
    });
  }

  /** NOTIFY statements for the changes, in payloads under PostgreSQL's 8000-byte limit. */
  private notifications(changes: readonly StoreChange[]): string {
    const statements: string[] = [];
    let batch: StoreChange[] = [];
    let size = 0;
    const flush = () => {
      if (batch.length === 0) return;
      const payload = JSON.stringify({ origin: this.origin, changes: batch }).replace(/'/g, "''");
      statements.push(`NOTIFY ${CHANGE_CHANNEL}, '${payload}'; `);
      batch = [];
      size = 0;
    };
    for (const change of changes) {
      const length = JSON.stringify(change).length;
      if (size + length > MAX_PAYLOAD) flush();
      batch.push(change);
      size += length;
    }
    flush();
    return statements.join('');
  }

  private async startListening(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (message) => {
      if (message.channel !== CHANGE_CHANNEL || !message.payload) return;
      try {
        const parsed = JSON.parse(message.payload) as { origin: string; changes: StoreChange[] };
        if (parsed.origin !== this.origin) this.listeners.emit(parsed.changes);
      } catch {
        // not ours
      }
    });
    const lost = () => {
      if (this.closed || this.listener !== client) return;
      this.listener = undefined;
      client.end().catch(() => undefined);
      this.listenAgain(1000);
    };
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGE_CHANNEL}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    this.listener = client;
  }

  /**
   * Listens again after a lost connection, every `delayMs` (doubling up to 30 s) until the database
   * answers; then every watcher resyncs, having missed what was committed in between.
   */
  private listenAgain(delayMs: number): void {
    if (this.closed) return;
    this.reconnect = setTimeout(() => {
      this.startListening().then(
        () => this.listeners.emit([{ kind: 'resync' }]),
        () => this.listenAgain(Math.min(delayMs * 2, 30_000)),
      );
    }, delayMs);
    this.reconnect.unref();
  }

  watch(listener: (change: StoreChange) => void): () => void {
    return this.listeners.add(listener);
  }

  /** True when the database holds no session and no audit record (`store copy` refuses to merge into a used one). */
  async isEmpty(): Promise<boolean> {
    const { rows } = await this.db.query<{ count: string }>('SELECT (SELECT count(*) FROM sessions) + (SELECT count(*) FROM audit_records) AS count');
    return Number(rows[0]?.count ?? 0) === 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.reconnect) clearTimeout(this.reconnect);
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => undefined);
    await this.pool.end();
  }
}

function ignoreLostConnection(): void {
  // the query in flight, or the next one, fails with the cause
}

/** A database that did not answer (down, restarting, a network fault), as opposed to one that refused these settings. */
function unreachable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', '57P03'].includes(code);
}
