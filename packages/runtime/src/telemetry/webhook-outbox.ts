/**
 * Lifecycle webhooks from a durable outbox (issue 24, item 2). The audit
 * chain commits first; then, on hearing a committed record (the audit tap),
 * the outbox turns the session's records past its scan mark into one
 * delivery per matching endpoint and moves the mark, in one transaction. A
 * server killed between the two loses nothing: at start it catches up every
 * session whose audit head is past its mark. Deliveries are unique per
 * (endpoint, session, seq), so servers sharing a store enqueue each once; a
 * server takes a delivery with a lease (compare-and-set) before sending it,
 * so each is sent by one server; an earlier pending delivery of the same
 * endpoint and session holds back the later ones (order per session). A
 * failed attempt is retried with exponential backoff for up to three days; a
 * 410 answer disables the endpoint.
 */
import { randomBytes } from 'node:crypto';
import type { AuditRecord } from '../audit/audit-record.js';
import type { Store, StoreTransaction } from '../core/store.js';
import { webhookEventMatches, type WebhookDeliveryRecord, type WebhookEndpointRecord } from '../core/webhook.js';
import { makesWebhookEvent, webhookEventOf } from './webhook-events.js';
import { signWebhook, webhookBackoffMs } from './webhook-signature.js';

/** What happened to one attempt, as the metrics count it. */
export type WebhookOutcome = 'delivered' | 'retried' | 'failed' | 'disabled';

/** Settings of the outbox; the defaults are the production ones. */
export interface WebhookOutboxOptions {
  store: Store;
  /** this server's node id: the owner of the leases it takes */
  nodeId: string;
  /** first retry delay, doubling (`AIRLOCK_WEBHOOK_RETRY_MS`); 5 s */
  retryFirstMs?: number;
  /** longest retry delay; 1 h */
  retryCapMs?: number;
  /** how long a delivery is retried before it is given up; 3 days */
  retryWindowMs?: number;
  /** how long a claimed delivery stays another node's; 60 s */
  leaseMs?: number;
  /** how often due deliveries are looked for when nothing woke the loop; 1 s */
  pollMs?: number;
  /** one attempt's time limit; 10 s */
  attemptTimeoutMs?: number;
  /** hears each attempt's outcome (metrics) */
  onOutcome?: (outcome: WebhookOutcome) => void;
}

const ENQUEUE_BATCH = 500;
const CLAIM_BATCH = 32;
/** Records after which a session's mark is moved even when none made an event. */
const SCAN_EVERY = 1000;

/** The outbox of one server: enqueue from the audit feed, deliver what is due. */
export class WebhookOutbox {
  private readonly retryFirstMs: number;
  private readonly retryCapMs: number;
  private readonly retryWindowMs: number;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly attemptTimeoutMs: number;
  /** the enqueue worker of each session with records heard and not yet enqueued */
  private readonly enqueues = new Map<string, Promise<void>>();
  /** the highest seq heard of each such session */
  private readonly wanted = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;
  private readonly inFlight = new Set<Promise<void>>();
  /** aborts the attempts under way when the server stops (they are retried at the next start) */
  private readonly stopping = new AbortController();
  /** endpoints by state as last read; `active` starts unknown (NaN) so that nothing is skipped before the first read */
  private endpointCounts: { active: number; disabled: number } = { active: Number.NaN, disabled: 0 };

  constructor(private readonly options: WebhookOutboxOptions) {
    this.retryFirstMs = options.retryFirstMs ?? 5_000;
    this.retryCapMs = options.retryCapMs ?? 3_600_000;
    this.retryWindowMs = options.retryWindowMs ?? 3 * 24 * 3_600_000;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.pollMs = options.pollMs ?? 1_000;
    this.attemptTimeoutMs = options.attemptTimeoutMs ?? 10_000;
  }

  /** Catches up every session whose audit head is past its scan mark, then delivers what is due, and keeps doing so. */
  async start(): Promise<void> {
    const endpoints = await this.options.store.transaction((tx) => tx.webhooks.listEndpoints());
    this.countEndpoints(endpoints);
    if (this.endpointCounts.active > 0) await this.catchUp();
    this.kick();
  }

  private countEndpoints(endpoints: WebhookEndpointRecord[]): void {
    const before = this.endpointCounts.active;
    this.endpointCounts = {
      active: endpoints.filter((endpoint) => endpoint.state === 'active').length,
      disabled: endpoints.filter((endpoint) => endpoint.state === 'disabled').length,
    };
    // Records heard while there was no endpoint were not looked at: the first endpoint's server (or a peer) looks now.
    if (before === 0 && this.endpointCounts.active > 0 && !this.closed) {
      const caught = this.catchUp().catch(() => undefined);
      this.inFlight.add(caught);
      void caught.finally(() => this.inFlight.delete(caught));
    }
  }

  /** Endpoints by state, as last read (for the `airlock_webhook_endpoints` gauge). */
  endpointsByState(): Record<string, number> {
    return Number.isNaN(this.endpointCounts.active) ? {} : { ...this.endpointCounts };
  }

  /** Hears a committed audit record: enqueues its events (and any the mark missed before it). Never throws. */
  hear(record: AuditRecord): void {
    // No endpoint anywhere (as last read): nothing to enqueue, and no transaction spent per record.
    if (this.closed || record.sessionId === '' || this.endpointCounts.active === 0) return;
    // A tool call's records make no event: no transaction for them. The scan from the mark still
    // passes over them when the next event comes (and every 1000 records, to keep the mark near the head).
    if (!makesWebhookEvent(record.type) && record.seq % SCAN_EVERY !== 0) return;
    const sessionId = record.sessionId;
    const wanted = this.wanted.get(sessionId);
    this.wanted.set(sessionId, Math.max(wanted ?? 0, record.seq));
    if (wanted !== undefined) return;
    // One worker per session: records heard while it works are taken together in its next pass.
    const work = (async () => {
      for (;;) {
        const target = this.wanted.get(sessionId) ?? 0;
        await this.enqueueUpTo(sessionId, target).catch(() => undefined);
        if ((this.wanted.get(sessionId) ?? 0) === target || this.closed) break;
      }
      this.wanted.delete(sessionId);
      this.enqueues.delete(sessionId);
    })();
    this.enqueues.set(sessionId, work);
  }

  /** Enqueues what every session committed past its mark (at start, and when the first endpoint appears). */
  private async catchUp(): Promise<void> {
    for (const sessionId of await this.options.store.listAuditedSessions()) {
      if (sessionId === '' || this.closed) continue;
      const head = await this.options.store.auditHead(sessionId);
      await this.enqueueUpTo(sessionId, head.seq);
    }
  }

  /** Turns a session's records past its mark, up to `seq`, into deliveries, and moves the mark, one transaction per batch. */
  private async enqueueUpTo(sessionId: string, seq: number): Promise<void> {
    let enqueued = false;
    for (;;) {
      const progress = await this.options.store.transaction(async (tx) => {
        const mark = await tx.webhooks.scanMark(sessionId);
        if (mark >= seq) return { done: true, enqueued: false };
        const records = await tx.listAudit(sessionId, { afterSeq: mark, limit: Math.min(ENQUEUE_BATCH, seq - mark) });
        const last = records.at(-1);
        if (!last) return { done: true, enqueued: false };
        const endpoints = (await tx.webhooks.listEndpoints()).filter((endpoint) => endpoint.state === 'active');
        let added = false;
        if (endpoints.length > 0) {
          const session = await tx.getSession(sessionId);
          const tenant = session?.tenant ?? '';
          for (const record of records) added = (await this.enqueueRecord(tx, record, tenant, endpoints)) || added;
        }
        await tx.webhooks.advanceScanMark(sessionId, last.seq);
        return { done: last.seq >= seq, enqueued: added };
      });
      enqueued = enqueued || progress.enqueued;
      if (progress.done) break;
    }
    if (enqueued) this.kick();
  }

  private async enqueueRecord(tx: StoreTransaction, record: AuditRecord, tenant: string, endpoints: WebhookEndpointRecord[]): Promise<boolean> {
    const approvalId = record.type === 'approval.requested' ? record.data['approvalId'] : undefined;
    const approval = typeof approvalId === 'string' ? await tx.getApproval(approvalId) : undefined;
    const event = webhookEventOf(record, tenant, approval);
    if (!event) return false;
    const body = JSON.stringify(event);
    const now = new Date().toISOString();
    let added = false;
    for (const endpoint of endpoints) {
      if (endpoint.tenant !== null && endpoint.tenant !== tenant) continue;
      // An endpoint hears what was committed after it was made, not the history before it.
      if (record.at < endpoint.createdAt) continue;
      if (!webhookEventMatches(endpoint.events, event.type)) continue;
      const inserted = await tx.webhooks.insertDelivery({
        id: `msg_${randomBytes(12).toString('hex')}`,
        endpointId: endpoint.id,
        sessionId: record.sessionId,
        seq: record.seq,
        body,
        state: 'pending',
        attempts: 0,
        createdAt: now,
        nextAttemptAt: now,
        leaseOwner: '',
        leaseUntil: '',
        lastError: null,
      });
      added = added || inserted;
    }
    return added;
  }

  /** Looks for due deliveries now (and again after each round that found some). */
  kick(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.running = this.round()
      .catch(() => undefined)
      .finally(() => {
        this.running = undefined;
        if (this.closed) return;
        if (this.again) {
          this.again = false;
          this.kick();
          return;
        }
        // With no endpoint, only a peer's new endpoint is looked for: less often.
        this.timer = setTimeout(() => this.kick(), this.endpointCounts.active > 0 ? this.pollMs : this.pollMs * 5);
        this.timer.unref();
      });
  }

  /** One round: claim what is due, send it, write the outcomes. */
  private async round(): Promise<void> {
    const now = new Date();
    const leaseUntil = new Date(now.getTime() + this.leaseMs).toISOString();
    const { endpoints, claimed } = await this.options.store.transaction(async (tx) => {
      const endpoints = await tx.webhooks.listEndpoints();
      const due = await tx.webhooks.listDueDeliveries(now.toISOString(), CLAIM_BATCH);
      const claimed: { delivery: WebhookDeliveryRecord; endpoint: WebhookEndpointRecord | undefined }[] = [];
      for (const delivery of due) {
        if (await tx.webhooks.claimDelivery(delivery.id, this.options.nodeId, now.toISOString(), leaseUntil)) {
          claimed.push({
            delivery: { ...delivery, leaseOwner: this.options.nodeId, leaseUntil },
            endpoint: endpoints.find((endpoint) => endpoint.id === delivery.endpointId),
          });
        }
      }
      return { endpoints, claimed };
    });
    this.countEndpoints(endpoints);
    if (claimed.length === 0) return;
    await Promise.all(
      claimed.map(({ delivery, endpoint }) => {
        const attempt = this.attempt(delivery, endpoint).catch(() => undefined);
        this.inFlight.add(attempt);
        return attempt.finally(() => this.inFlight.delete(attempt));
      }),
    );
    this.again = true;
  }

  /** Sends one delivery and records its outcome. */
  private async attempt(delivery: WebhookDeliveryRecord, endpoint: WebhookEndpointRecord | undefined): Promise<void> {
    const release = { leaseOwner: '', leaseUntil: '' };
    if (!endpoint || endpoint.state !== 'active') {
      await this.finish({ ...delivery, ...release, state: 'failed', lastError: 'the endpoint was removed or disabled' }, 'failed');
      return;
    }
    const answer = await send(endpoint, delivery.id, delivery.body, this.attemptTimeoutMs, this.stopping.signal);
    const attempts = delivery.attempts + 1;
    if (answer.status !== undefined && answer.status >= 200 && answer.status < 300) {
      await this.finish({ ...delivery, ...release, attempts, state: 'delivered', lastError: null }, 'delivered');
      return;
    }
    const lastError = answer.status !== undefined ? `the endpoint answered ${answer.status}` : `the endpoint did not answer: ${answer.error}`;
    if (answer.status === 410) {
      await this.options.store.transaction(async (tx) => {
        const current = await tx.webhooks.getEndpoint(endpoint.id);
        if (current && current.state === 'active')
          await tx.webhooks.updateEndpoint({ ...current, state: 'disabled', disabledReason: 'the endpoint answered 410 Gone' });
        await tx.webhooks.finishAttempt({ ...delivery, ...release, attempts, state: 'failed', lastError }, delivery.leaseOwner);
      });
      this.options.onOutcome?.('disabled');
      return;
    }
    const now = Date.now();
    if (now - Date.parse(delivery.createdAt) >= this.retryWindowMs) {
      await this.finish({ ...delivery, ...release, attempts, state: 'failed', lastError }, 'failed');
      return;
    }
    const nextAttemptAt = new Date(now + webhookBackoffMs(attempts, this.retryFirstMs, this.retryCapMs)).toISOString();
    await this.finish({ ...delivery, ...release, attempts, nextAttemptAt, lastError }, 'retried');
  }

  private async finish(next: WebhookDeliveryRecord, outcome: WebhookOutcome): Promise<void> {
    const written = await this.options.store.transaction((tx) => tx.webhooks.finishAttempt(next, this.options.nodeId));
    if (written) this.options.onOutcome?.(outcome);
  }

  /** Stops the loop; attempts under way finish (their outcome is written) first. */
  async close(): Promise<void> {
    this.closed = true;
    this.stopping.abort();
    if (this.timer) clearTimeout(this.timer);
    await Promise.allSettled([...this.enqueues.values()]);
    await this.running?.catch(() => undefined);
    await Promise.allSettled([...this.inFlight]);
  }
}

/** POSTs a signed body; the status, or why there was none. Secrets never reach an error text. */
export async function send(
  endpoint: WebhookEndpointRecord,
  id: string,
  body: string,
  timeoutMs: number,
  stop?: AbortSignal,
): Promise<{ status?: number; error?: string }> {
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'airlock-webhooks',
    ...signWebhook(endpoint.secret, id, Math.floor(Date.now() / 1000), body),
  };
  try {
    const response = await fetch(endpoint.url, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      signal: stop ? AbortSignal.any([stop, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel().catch(() => undefined);
    return { status: response.status };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    return { error: cause ?? (error as Error).name };
  }
}
