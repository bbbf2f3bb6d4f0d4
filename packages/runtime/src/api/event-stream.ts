/**
 * One server-sent event stream of `GET /v1/events`: what changed, coalesced
 * and bounded. Changes are only marks; the data sent is read from the store
 * at send time, so a burst of 100 tool calls on a session costs one
 * `session.changed` with its state now, and a slow reader is cut (it
 * reconnects and reloads) instead of growing the server's memory.
 */
import type { ServerResponse } from 'node:http';
import type { Activity, ActivityFeed } from './activity-feed.js';
import type { AirlockServices } from './airlock-services.js';
import type { Identity } from './authentication.js';
import type { AuditRecord } from '../audit/audit-record.js';
import { sessionView } from './session-view.js';
import { isAirlockError } from '../core/errors.js';

/** Audit records queued for one flush at most; past this the stream asks the client to reload. */
const MAX_QUEUED_RECORDS = 500;
/** Bytes written but not yet taken by the client before the stream is cut. */
const MAX_UNSENT_BYTES = 1024 * 1024;

/** Options of one stream. */
export interface EventStreamOptions {
  identity: Identity;
  /** only this session's changes, and its audit records as `audit.appended` */
  sessionId?: string;
  /** between flushes of coalesced changes */
  flushMs?: number;
  /** between heartbeat comments that keep proxies and the browser from closing an idle stream */
  heartbeatMs?: number;
}

/** A live stream of session, approval and audit changes to one client. */
export class EventStream {
  private readonly dirtySessions = new Set<string>();
  private readonly dirtyApprovals = new Set<string>();
  private readonly records: AuditRecord[] = [];
  private overflowed = false;
  private flushTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private readonly heartbeat: NodeJS.Timeout;
  private readonly unsubscribe: () => void;
  private eventId = 0;
  private closed = false;

  constructor(
    private readonly response: ServerResponse,
    private readonly services: AirlockServices,
    feed: ActivityFeed,
    private readonly options: EventStreamOptions,
  ) {
    response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    // The client reloads its lists on every (re)connect, so a reconnect loses nothing; retry fast.
    response.write('retry: 2000\n\n');
    this.send('stream.ready', { sessionId: options.sessionId ?? null, at: new Date().toISOString() });
    this.unsubscribe = feed.subscribe((activity) => this.hear(activity));
    this.heartbeat = setInterval(() => this.write(`: heartbeat ${new Date().toISOString()}\n\n`), options.heartbeatMs ?? 15_000);
    response.on('close', () => this.close());
  }

  /** Stops listening and ends the response. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    clearInterval(this.heartbeat);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    if (!this.response.writableEnded) this.response.end();
  }

  private hear(activity: Activity): void {
    if (activity.kind === 'approval') {
      if (this.options.sessionId !== undefined && activity.approval.sessionId !== this.options.sessionId) return;
      this.dirtyApprovals.add(activity.approval.id);
    } else {
      const sessionId = activity.record.sessionId;
      // '' is the system chain (secrets): not about any session.
      if (sessionId === '') return;
      if (this.options.sessionId !== undefined && sessionId !== this.options.sessionId) return;
      this.dirtySessions.add(sessionId);
      if (this.options.sessionId !== undefined) {
        if (this.records.length < MAX_QUEUED_RECORDS) this.records.push(activity.record);
        else this.overflowed = true;
      }
    }
    // One flush at a time: the next waits for the reads of the one before.
    this.flushTimer ??= setTimeout(() => {
      this.flushing = this.flushing.then(() => this.flush()).catch(() => undefined);
    }, this.options.flushMs ?? 100);
  }

  private async flush(): Promise<void> {
    this.flushTimer = undefined;
    if (this.closed) return;
    if (this.overflowed) {
      // Too much at once to send record by record: the client reloads the audit instead.
      this.send('stream.resync', { reason: `more than ${MAX_QUEUED_RECORDS} records in one flush` });
      this.overflowed = false;
      this.records.length = 0;
    }
    for (const record of this.records.splice(0)) {
      const { prevHash: _previous, hash: _hash, ...shown } = record;
      this.send('audit.appended', shown);
    }
    for (const sessionId of [...this.dirtySessions]) {
      this.dirtySessions.delete(sessionId);
      const session = await this.read(() => this.services.sessions.get(sessionId));
      if (session && !this.closed && this.visible(session.tenant)) this.send('session.changed', sessionView(session));
    }
    for (const approvalId of [...this.dirtyApprovals]) {
      this.dirtyApprovals.delete(approvalId);
      const approval = await this.read(() => this.services.approvals.get(approvalId));
      const session = approval ? await this.read(() => this.services.sessions.get(approval.sessionId)) : undefined;
      if (approval && !this.closed && (!session || this.visible(session.tenant))) this.send('approval.changed', approval);
    }
  }

  /** Tokens bound to one tenant (issue 12) see only that tenant's sessions. */
  private visible(tenant: string): boolean {
    return this.options.identity.tenant === '*' || this.options.identity.tenant === tenant;
  }

  private async read<T>(load: () => Promise<T>): Promise<T | undefined> {
    try {
      return await load();
    } catch (error) {
      // Gone between the change and the flush (e.g. removed): nothing to send.
      if (isAirlockError(error)) return undefined;
      throw error;
    }
  }

  private send(event: string, data: unknown): void {
    this.eventId += 1;
    this.write(`event: ${event}\nid: ${this.eventId}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  private write(text: string): void {
    if (this.closed) return;
    if (this.response.writableLength > MAX_UNSENT_BYTES) {
      this.close();
      return;
    }
    this.response.write(text);
  }
}
