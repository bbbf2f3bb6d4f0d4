/**
 * The console's connection to `GET /v1/events`. The browser's EventSource
 * reconnects by itself after a network blip; when the server refuses the
 * stream (login gone) or the stream stays down, this retries on its own
 * schedule. Every (re)connect asks the page to reload what it shows, so a
 * change made while the stream was down is never missed.
 */
import { api, isLoginLost } from './api-client';
import type { StreamedAuditRecord, SessionInfo, ApprovalInfo } from './api-types';

/** How the stream is doing, for the status shown in the header. */
export type StreamStatus = 'connecting' | 'live' | 'reconnecting';

/** What a stream delivers. */
export interface LiveEventHandlers {
  onSession?(session: SessionInfo): void;
  onApproval?(approval: ApprovalInfo): void;
  onAudit?(record: StreamedAuditRecord): void;
  /** after every (re)connect and after a resync request: reload lists */
  onResync?(): void;
  onStatus?(status: StreamStatus, downSince: number | null): void;
}

/** One live event stream; `close()` ends it. */
export class LiveEvents {
  private source: EventSource | null = null;
  private retryTimer: number | undefined;
  private closed = false;
  private downSince: number | null = null;
  private attempts = 0;

  constructor(
    private readonly url: string,
    private readonly handlers: LiveEventHandlers,
  ) {
    this.open();
  }

  /** Stops listening for good. */
  close(): void {
    this.closed = true;
    window.clearTimeout(this.retryTimer);
    this.source?.close();
    this.source = null;
  }

  private open(): void {
    if (this.closed) return;
    this.handlers.onStatus?.(this.downSince === null ? 'connecting' : 'reconnecting', this.downSince);
    const source = new EventSource(this.url, { withCredentials: true });
    this.source = source;
    source.addEventListener('stream.ready', () => {
      this.downSince = null;
      this.attempts = 0;
      this.handlers.onStatus?.('live', null);
      this.handlers.onResync?.();
    });
    source.addEventListener('stream.resync', () => this.handlers.onResync?.());
    source.addEventListener('session.changed', (event) => this.handlers.onSession?.(JSON.parse((event as MessageEvent<string>).data) as SessionInfo));
    source.addEventListener('approval.changed', (event) => this.handlers.onApproval?.(JSON.parse((event as MessageEvent<string>).data) as ApprovalInfo));
    source.addEventListener('audit.appended', (event) => this.handlers.onAudit?.(JSON.parse((event as MessageEvent<string>).data) as StreamedAuditRecord));
    source.onerror = () => {
      this.downSince ??= Date.now();
      this.handlers.onStatus?.('reconnecting', this.downSince);
      // CONNECTING: the browser retries by itself. CLOSED: it gave up (an error status); find out why.
      if (source.readyState === EventSource.CLOSED) void this.retryLater();
    };
  }

  private async retryLater(): Promise<void> {
    this.source?.close();
    this.source = null;
    try {
      // A 401 here hands the page back to the login form (api() reports it); then there is nothing to retry.
      await api('GET', '/v1/whoami');
    } catch (error) {
      if (isLoginLost(error)) return this.close();
    }
    this.attempts += 1;
    const delay = Math.min(1000 * 2 ** Math.min(this.attempts, 4), 15_000);
    this.retryTimer = window.setTimeout(() => this.open(), delay);
  }
}
