/**
 * Webhook endpoints and their outbox as the store keeps them (issue 24,
 * item 2). An endpoint's secret is kept as given, because it must sign;
 * it is returned once, at creation, and never again. A delivery is one event
 * for one endpoint, unique per (endpoint, session, audit seq), so that two
 * servers hearing the same audit record enqueue it once.
 */

/** `active` endpoints receive events; `disabled` ones (a 410 answer, or an operator) do not. */
export type WebhookEndpointState = 'active' | 'disabled';

/** A webhook endpoint as stored. */
export interface WebhookEndpointRecord {
  /** `wh_…` */
  id: string;
  url: string;
  /** event patterns: `session.*`, `approval.requested`, `*` */
  events: string[];
  /** only this tenant's events; null: every tenant's */
  tenant: string | null;
  /** `whsec_` + base64 of the signing key; never leaves the server after creation */
  secret: string;
  state: WebhookEndpointState;
  /** why it was disabled (e.g. `the endpoint answered 410 Gone`) */
  disabledReason: string | null;
  createdAt: string;
  /** the token name that created it */
  createdBy: string;
}

/** `pending` until delivered (`delivered`) or given up after the retry window (`failed`). */
export type WebhookDeliveryState = 'pending' | 'delivered' | 'failed';

/** One event for one endpoint, in the outbox. */
export interface WebhookDeliveryRecord {
  /** `msg_…`: the `webhook-id` header; the same on every retry */
  id: string;
  endpointId: string;
  sessionId: string;
  /** the audit record this event was made from */
  seq: number;
  /** the JSON body sent, exactly */
  body: string;
  state: WebhookDeliveryState;
  attempts: number;
  createdAt: string;
  /** not tried again before this instant (ISO 8601) */
  nextAttemptAt: string;
  /** a node's claim on it, until `leaseUntil` (ISO 8601, '' when unclaimed) */
  leaseOwner: string;
  leaseUntil: string;
  lastError: string | null;
}

/** Whether an event type matches one of `patterns` (`*`, `session.*`, exact names). */
export function webhookEventMatches(patterns: readonly string[], type: string): boolean {
  return patterns.some((pattern) => pattern === '*' || pattern === type || (pattern.endsWith('.*') && type.startsWith(pattern.slice(0, -1))));
}
