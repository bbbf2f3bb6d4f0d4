/** Lifecycle webhook endpoints of a server (admin only): register, list, remove, test. */
import type { Connection } from './connection.js';

/** An endpoint as lists show it: never its secret. */
export interface WebhookInfo {
  id: string;
  url: string;
  events: string[];
  /** only this tenant's events; null: every tenant's */
  tenant: string | null;
  state: 'active' | 'disabled';
  disabledReason: string | null;
  createdAt: string;
  createdBy: string;
  /** deliveries by state (pending, delivered, failed); lists only */
  deliveries?: Record<string, number>;
}

/** An endpoint just registered: `secret` (`whsec_…`) signs its deliveries and is shown this once. */
export interface CreatedWebhook extends WebhookInfo {
  secret: string;
}

/** What a test delivery got back. */
export interface WebhookTestResult {
  id: string;
  status: number | null;
  ok: boolean;
  error: string | null;
}

/** The webhook endpoints of a server. */
export class Webhooks {
  constructor(private readonly connection: Connection) {}

  /** Registers an endpoint for event patterns (`session.*`, `approval.requested`, `*`), of one tenant or all. */
  async create(options: { url: string; events: string[]; tenant?: string }): Promise<CreatedWebhook> {
    return (await this.connection.json<CreatedWebhook>('POST', '/v1/webhooks', options)).body;
  }

  /** Every endpoint, without secrets. */
  async list(): Promise<WebhookInfo[]> {
    return (await this.connection.json<{ webhooks: WebhookInfo[] }>('GET', '/v1/webhooks')).body.webhooks;
  }

  /** Removes an endpoint and its pending deliveries. */
  async remove(id: string): Promise<WebhookInfo> {
    return (await this.connection.json<WebhookInfo>('DELETE', `/v1/webhooks/${encodeURIComponent(id)}`)).body;
  }

  /** Sends a signed `webhook.test` event now. */
  async test(id: string): Promise<WebhookTestResult> {
    return (await this.connection.json<WebhookTestResult>('POST', `/v1/webhooks/${encodeURIComponent(id)}/test`)).body;
  }
}
