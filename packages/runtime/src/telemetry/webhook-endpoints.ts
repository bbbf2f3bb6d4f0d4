/**
 * The webhook endpoints an admin registers (`airlock webhooks add|ls|rm|test`).
 * The secret is made here, answered once by `add`, and never shown again.
 */
import { randomBytes } from 'node:crypto';
import type { Store } from '../core/store.js';
import type { AuditLog } from '../audit/audit-log.js';
import { AirlockError } from '../core/errors.js';
import { webhookEventMatches, type WebhookEndpointRecord } from '../core/webhook.js';
import { WEBHOOK_EVENT_TYPES } from './webhook-events.js';
import { newWebhookSecret } from './webhook-signature.js';
import { send } from './webhook-outbox.js';

/** An endpoint as lists show it: never its secret. */
export type WebhookEndpointView = Omit<WebhookEndpointRecord, 'secret'> & { deliveries: Record<string, number> };

/** What `add` asks for. */
export interface WebhookEndpointRequest {
  url: string;
  events: string[];
  tenant?: string;
}

/** Endpoint management over the store. */
export class WebhookEndpoints {
  constructor(
    private readonly store: Store,
    private readonly audit: AuditLog,
    private readonly onChange: () => void = () => undefined,
  ) {}

  /** Registers an endpoint; answers it with its secret (the only time the secret leaves the server). */
  async add(request: WebhookEndpointRequest, by: string): Promise<WebhookEndpointRecord> {
    checkUrl(request.url);
    checkEvents(request.events);
    const endpoint: WebhookEndpointRecord = {
      id: `wh_${randomBytes(8).toString('hex')}`,
      url: request.url,
      events: [...new Set(request.events)],
      tenant: request.tenant ?? null,
      secret: newWebhookSecret(),
      state: 'active',
      disabledReason: null,
      createdAt: new Date().toISOString(),
      createdBy: by,
    };
    await this.store.transaction(async (tx) => {
      await tx.webhooks.insertEndpoint(endpoint);
      // The system chain records who registered what (never the secret).
      await this.audit.append(tx, {
        sessionId: '',
        type: 'webhook.created',
        data: { webhookId: endpoint.id, url: endpoint.url, events: endpoint.events, tenant: endpoint.tenant, by },
      });
    });
    this.onChange();
    return endpoint;
  }

  /** Every endpoint, without secrets, with its deliveries counted by state. */
  async list(): Promise<WebhookEndpointView[]> {
    return this.store.transaction(async (tx) => {
      const views: WebhookEndpointView[] = [];
      for (const endpoint of await tx.webhooks.listEndpoints())
        views.push({ ...withoutSecret(endpoint), deliveries: await tx.webhooks.countDeliveries(endpoint.id) });
      return views;
    });
  }

  /** Removes an endpoint and its pending deliveries. */
  async remove(id: string, by: string): Promise<Omit<WebhookEndpointRecord, 'secret'>> {
    const removed = await this.store.transaction(async (tx) => {
      const endpoint = await tx.webhooks.getEndpoint(id);
      if (!endpoint) return undefined;
      await tx.webhooks.deleteEndpoint(id);
      await this.audit.append(tx, { sessionId: '', type: 'webhook.removed', data: { webhookId: id, url: endpoint.url, by } });
      return endpoint;
    });
    if (!removed) throw notFound(id);
    this.onChange();
    return withoutSecret(removed);
  }

  /** Sends a signed `webhook.test` event now, outside the outbox; answers the endpoint's status. */
  async test(id: string): Promise<{ id: string; status: number | null; ok: boolean; error: string | null }> {
    const endpoint = await this.store.transaction((tx) => tx.webhooks.getEndpoint(id));
    if (!endpoint) throw notFound(id);
    const messageId = `msg_${randomBytes(12).toString('hex')}`;
    const body = JSON.stringify({ type: 'webhook.test', timestamp: new Date().toISOString(), data: { endpointId: id } });
    const answer = await send(endpoint, messageId, body, 10_000);
    const ok = answer.status !== undefined && answer.status >= 200 && answer.status < 300;
    return {
      id: messageId,
      status: answer.status ?? null,
      ok,
      error: ok ? null : answer.status !== undefined ? `the endpoint answered ${answer.status}` : `the endpoint did not answer: ${answer.error}`,
    };
  }
}

/** An endpoint without its secret. */
export function withoutSecret(endpoint: WebhookEndpointRecord): Omit<WebhookEndpointRecord, 'secret'> {
  const { secret: _secret, ...rest } = endpoint;
  return rest;
}

function notFound(id: string): AirlockError {
  return new AirlockError('WEBHOOK_NOT_FOUND', `webhook endpoint ${id} does not exist; list them with \`airlock webhooks ls\``, { details: { webhookId: id } });
}

function checkUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new AirlockError('INVALID_ARGUMENTS', `webhook URL ${JSON.stringify(url)} is not a URL; give an absolute http:// or https:// URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new AirlockError('INVALID_ARGUMENTS', `webhook URL must be http:// or https://, not ${parsed.protocol}`);
  }
  if (parsed.username || parsed.password)
    throw new AirlockError('INVALID_ARGUMENTS', 'webhook URL must not carry credentials; the signature authenticates the server');
}

function checkEvents(events: string[]): void {
  if (events.length === 0) throw new AirlockError('INVALID_ARGUMENTS', "give at least one event pattern, e.g. --events 'session.*,approval.*'");
  for (const pattern of events) {
    if (!WEBHOOK_EVENT_TYPES.some((type) => webhookEventMatches([pattern], type))) {
      throw new AirlockError(
        'INVALID_ARGUMENTS',
        `event pattern ${JSON.stringify(pattern)} matches no event; use * or one of: ${WEBHOOK_EVENT_TYPES.join(', ')} (or a prefix such as session.*)`,
      );
    }
  }
}
