/**
 * `sandbox.snapshots`: snapshots of a session (memory, processes and disk at
 * one instant) as artifacts: take, list, inspect, delete. Unscoped (`new
 * Snapshots(connection)`), it lists every snapshot on the server.
 */
import type { Connection } from './connection.js';
import { AirlockApiError } from './errors.js';
import type { SnapshotInfo } from './types.js';

/** Snapshots, optionally scoped to one session. */
export class Snapshots {
  constructor(
    private readonly connection: Connection,
    private readonly sessionId?: string,
  ) {}

  /** Takes a snapshot of the session's running machine; it is paused only while memory and disk are saved. */
  async create(options: { name?: string } = {}): Promise<SnapshotInfo> {
    if (!this.sessionId) throw new AirlockApiError('INVALID_ARGUMENTS', 'create snapshots through a session: `sandbox.snapshots.create()`', 400);
    const body = options.name === undefined ? {} : { name: options.name };
    return (await this.connection.json<SnapshotInfo>('POST', `/v1/sessions/${encodeURIComponent(this.sessionId)}/snapshots`, body)).body;
  }

  /** Snapshots of the session (or of every session when unscoped), oldest first; `all` includes deleted ones. */
  async list(options: { all?: boolean } = {}): Promise<SnapshotInfo[]> {
    const query = new URLSearchParams();
    if (this.sessionId) query.set('sessionId', this.sessionId);
    if (options.all) query.set('all', 'true');
    return (await this.connection.json<{ snapshots: SnapshotInfo[] }>('GET', `/v1/snapshots?${query}`)).body.snapshots;
  }

  /** One snapshot (also once deleted: `state` says so). */
  async get(id: string): Promise<SnapshotInfo> {
    return (await this.connection.json<SnapshotInfo>('GET', `/v1/snapshots/${encodeURIComponent(id)}`)).body;
  }

  /** Deletes the snapshot's bytes; its record stays, marked deleted. */
  async remove(id: string): Promise<SnapshotInfo> {
    return (await this.connection.json<SnapshotInfo>('DELETE', `/v1/snapshots/${encodeURIComponent(id)}`)).body;
  }
}
