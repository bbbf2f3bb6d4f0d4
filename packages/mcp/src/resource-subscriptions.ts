/**
 * `resources/subscribe`: tells a client when a workspace file it subscribed
 * to changes. There is no file watch across the sandbox boundary, so the
 * files are polled, and polled only when something could have changed them:
 * every `intervalMs` the session record is read (not a tool call: it neither
 * wakes the machine nor is audited), and only when another tool call ended
 * since the last look, and the machine is running, is each subscribed file
 * read again through the airlock (`files.read`, audited like any read) and
 * compared with what it was. So an idle session stays idle and sleeps as
 * usual; a change made by a process running in the background is seen after
 * the next tool call on the session.
 */
import { createHash } from 'node:crypto';
import type { SessionInfo } from '@airlock/sdk';
import type { CallOutcome, CallRefusal } from './session-calls.js';
import { pathOfSegments, segmentsOfUri } from './workspace-uri.js';
import { protocolError, REQUEST_REFUSED } from './protocol-error.js';

/** The calls the subscriptions make (a `SessionCalls`). */
export interface SubscriptionCalls {
  submit(tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<CallOutcome>;
  info(signal?: AbortSignal): Promise<SessionInfo>;
}

/** Options of the subscriptions of one MCP session. */
export interface ResourceSubscriptionsOptions {
  calls: SubscriptionCalls;
  /** sends `notifications/resources/updated` for a URI */
  notify: (uri: string) => Promise<void>;
  /** how often the session is looked at while something is subscribed (default 2,000 ms) */
  intervalMs?: number;
  /** told about a poll that failed (the next one tries again) */
  onError?: (error: unknown) => void;
}

/** Bytes of a file hashed to notice a change; past this, size and time of the last change stand in for the rest. */
const HASHED_BYTES = 1024 * 1024;

/** The subscriptions of one MCP session, and the poller that serves them while there are any. */
export class ResourceSubscriptions {
  /** URI → what the file looked like at the last look */
  private readonly watched = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  /** the session's tool-call count when the files were last read */
  private seenCalls = -1;
  private readonly controller = new AbortController();
  private readonly intervalMs: number;

  constructor(private readonly options: ResourceSubscriptionsOptions) {
    this.intervalMs = options.intervalMs ?? 2000;
  }

  /** Subscribes to a URI; reads the file once now, so that a path the policy denies is refused with its reason. */
  async subscribe(uri: string, signal: AbortSignal): Promise<void> {
    const segments = segmentsOfUri(uri);
    const fingerprint = await this.fingerprint(pathOfSegments(segments), signal, true);
    if (this.watched.size === 0) this.seenCalls = (await this.options.calls.info(signal)).meters.toolCalls;
    this.watched.set(uri, fingerprint);
    this.timer ??= setInterval(() => void this.poll(), this.intervalMs);
  }

  /** Ends a subscription (unknown URIs are fine: unsubscribing twice is not an error). */
  unsubscribe(uri: string): void {
    this.watched.delete(uri);
    if (this.watched.size === 0) this.stopTimer();
  }

  /** Stops polling for good and waits for a poll in progress. */
  async close(): Promise<void> {
    this.watched.clear();
    this.stopTimer();
    this.controller.abort();
    await this.polling?.catch(() => undefined);
  }

  /** One look; runs at most one at a time. */
  poll(): Promise<void> {
    this.polling ??= this.pollOnce()
      .catch((error: unknown) => {
        if (!this.controller.signal.aborted) this.options.onError?.(error);
      })
      .finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async pollOnce(): Promise<void> {
    const signal = this.controller.signal;
    const before = await this.options.calls.info(signal);
    // Asleep, nothing runs to change a file, and a read would wake the machine.
    if (before.state !== 'running' || before.meters.toolCalls === this.seenCalls || this.watched.size === 0) return;
    let reads = 0;
    for (const [uri, previous] of [...this.watched]) {
      reads += 1;
      const now = await this.fingerprint(pathOfSegments(segmentsOfUri(uri)), signal, false);
      if (!this.watched.has(uri) || now === previous) continue;
      this.watched.set(uri, now);
      await this.options.notify(uri);
    }
    const after = (await this.options.calls.info(signal)).meters.toolCalls;
    // Calls of others that ended during these reads may have changed a file already read: look again next time.
    this.seenCalls = after - before.meters.toolCalls <= reads ? after : before.meters.toolCalls;
  }

  /** What the file looks like: missing, refused, or its size and content hash. */
  private async fingerprint(path: string, signal: AbortSignal, strict: boolean): Promise<string> {
    const outcome = await this.options.calls.submit('files.read', { path, encoding: 'base64', maxBytes: HASHED_BYTES }, signal);
    if (outcome.status === 'completed') {
      const result = outcome.result;
      const hash = createHash('sha256').update(Buffer.from(String(result['content'] ?? ''), 'base64')).digest('hex');
      let tail = '';
      if (result['truncated']) {
        const stat = await this.options.calls.submit('files.stat', { path }, signal);
        tail = stat.status === 'completed' ? String(stat.result['modifiedAt']) : 'unknown';
      }
      return `file:${Number(result['size'])}:${hash}:${tail}`;
    }
    if (outcome.status === 'refused' && outcome.code === 'FILE_NOT_FOUND') return 'missing';
    if (strict) throw subscribeRefusal(outcome.status === 'refused' ? outcome : { status: 'refused', code: 'APPROVAL_PENDING', message: `reading ${path} is held for a human (approval ${outcome.approvalId}); subscribe once reads of it are allowed`, decision: outcome.decision });
    return `refused:${outcome.status === 'refused' ? outcome.code : 'pending'}`;
  }

  private stopTimer(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

function subscribeRefusal(refusal: CallRefusal): Error {
  const reason = refusal.decision?.reason;
  return protocolError(REQUEST_REFUSED, `${refusal.code}: ${refusal.message}${reason && reason !== refusal.message ? `\npolicy reason: ${reason}` : ''}`, {
    code: refusal.code,
    policyIds: refusal.decision?.policyIds ?? [],
    ...(reason ? { reason } : {}),
  });
}
