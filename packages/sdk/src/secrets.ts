/** Secrets the egress gateway injects into requests: set, list (names only), remove. Values never come back. */
import type { Connection } from './connection.js';

/** What the server shows of a secret. */
export interface SecretInfo {
  name: string;
  createdAt: string;
  updatedAt: string;
  bytes: number;
  /** the tenants whose sessions may use it; null: every tenant */
  tenants: string[] | null;
}

/** The secrets of a server. */
export class Secrets {
  constructor(private readonly connection: Connection) {}

  /** Stores (or replaces) a secret; `tenants` gives it to those tenants' sessions only (null: every tenant). */
  async set(name: string, value: string, options: { tenants?: string[] | null } = {}): Promise<SecretInfo> {
    return (await this.connection.json<SecretInfo>('PUT', `/v1/secrets/${encodeURIComponent(name)}`, { value, ...(options.tenants === undefined ? {} : { tenants: options.tenants }) })).body;
  }

  /** Every secret, without values. */
  async list(): Promise<SecretInfo[]> {
    return (await this.connection.json<{ secrets: SecretInfo[] }>('GET', '/v1/secrets')).body.secrets;
  }

  /** Deletes a secret; sessions using it get a clear error on their next request. */
  async remove(name: string): Promise<void> {
    await this.connection.json('DELETE', `/v1/secrets/${encodeURIComponent(name)}`);
  }
}

/** Replaces a running session's network lists (a new contract version); returns the session as the server shows it. */
export async function updateSessionNetwork(
  connection: Connection,
  sessionId: string,
  network: { allowedDomains?: string[]; deniedDomains?: string[] },
): Promise<Record<string, unknown>> {
  return (await connection.json<Record<string, unknown>>('PATCH', `/v1/sessions/${encodeURIComponent(sessionId)}/contract`, { network })).body;
}
