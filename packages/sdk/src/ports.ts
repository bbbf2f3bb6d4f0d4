/**
 * `sandbox.ports`: make ports of the session machine reachable through the
 * server. A request to `url` (with the API token as a bearer header) is
 * proxied to the port inside the machine, waking it if it sleeps.
 */
import type { Connection } from './connection.js';

/** An exposed port and where to reach it. */
export interface ExposedPort {
  port: number;
  /** path on the server, e.g. `/v1/sessions/ses_…/ports/8000/` */
  path: string;
  /** the server's URL for the port, as the server sees its own address */
  url: string;
}

/** Exposes and lists ports of one session. */
export class Ports {
  constructor(
    private readonly connection: Connection,
    private readonly sessionId: string,
  ) {}

  /** Exposes `port` and returns its URL (relative to this connection's server URL). */
  async expose(port: number): Promise<ExposedPort> {
    const { body } = await this.connection.json<ExposedPort>('POST', this.path(''), { port });
    return { ...body, url: this.url(port) };
  }

  /** The exposed ports. */
  async list(): Promise<ExposedPort[]> {
    const { body } = await this.connection.json<{ ports: ExposedPort[] }>('GET', this.path(''));
    return body.ports.map((entry) => ({ ...entry, url: this.url(entry.port) }));
  }

  /** Makes `port` unreachable again. */
  async remove(port: number): Promise<void> {
    await this.connection.json('DELETE', this.path(`/${port}`));
  }

  /** The URL of `port` on this connection's server (send the API token as a bearer header). */
  url(port: number): string {
    return `${this.connection.url}${this.path(`/${port}/`)}`;
  }

  private path(suffix: string): string {
    return `/v1/sessions/${encodeURIComponent(this.sessionId)}/ports${suffix}`;
  }
}
