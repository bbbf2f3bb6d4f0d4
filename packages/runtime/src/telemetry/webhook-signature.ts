/**
 * Standard Webhooks 1.0 signing: `webhook-signature: v1,<base64 HMAC-SHA256
 * of "id.timestamp.body">` keyed with the base64-decoded part of the
 * `whsec_` secret; and the retry schedule of the outbox.
 */
import { createHmac, randomBytes } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/** A fresh endpoint secret: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** The headers that sign `body` as message `id` sent at `timestampSeconds`. */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): Record<string, string> {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': `v1,${signature}` };
}

/** How long to wait before attempt `attempts + 1`: `firstMs` doubling, capped at `capMs`. */
export function webhookBackoffMs(attempts: number, firstMs: number, capMs: number): number {
  const exponent = Math.max(0, attempts - 1);
  return Math.min(capMs, firstMs * 2 ** Math.min(exponent, 40));
}
