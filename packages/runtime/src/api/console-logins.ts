/**
 * Logins of the web console: a random server-side id in an HttpOnly cookie
 * stands for a token that was presented once, so the token itself never sits
 * in the browser. Kept in memory: a restart of the server logs everyone out,
 * which costs a person one login and keeps no credential on disk.
 */
import { randomBytes } from 'node:crypto';
import type { TokenGrant } from './authentication.js';

/** Default lifetime of a console login. */
export const DEFAULT_LOGIN_SECONDS = 12 * 3600;

/** At most this many logins live at once; the oldest goes first (a bound, not a policy). */
const MAX_LOGINS = 1000;

/** One console login. */
export interface ConsoleLogin {
  /** the cookie value: random, never derived from the token */
  id: string;
  /** sent back in the X-Airlock-CSRF header of every state-changing request */
  csrfToken: string;
  grant: TokenGrant;
  createdAt: Date;
  expiresAt: Date;
}

/** The console logins of this server process. */
export class ConsoleLogins {
  private readonly logins = new Map<string, ConsoleLogin>();
  private readonly lifetimeMs: number;
  private readonly now: () => Date;

  constructor(options: { lifetimeSeconds?: number; now?: () => Date } = {}) {
    this.lifetimeMs = (options.lifetimeSeconds ?? DEFAULT_LOGIN_SECONDS) * 1000;
    this.now = options.now ?? (() => new Date());
  }

  /** Starts a login for a token's grant. */
  create(grant: TokenGrant): ConsoleLogin {
    this.removeExpired();
    while (this.logins.size >= MAX_LOGINS) {
      const oldest = this.logins.keys().next().value;
      if (oldest === undefined) break;
      this.logins.delete(oldest);
    }
    const createdAt = this.now();
    const login: ConsoleLogin = {
      id: randomBytes(32).toString('base64url'),
      csrfToken: randomBytes(32).toString('base64url'),
      grant,
      createdAt,
      expiresAt: new Date(createdAt.getTime() + this.lifetimeMs),
    };
    this.logins.set(login.id, login);
    return login;
  }

  /** The live login with this id, or undefined when it never existed, ended or expired. */
  find(id: string): ConsoleLogin | undefined {
    const login = this.logins.get(id);
    if (!login) return undefined;
    if (login.expiresAt.getTime() <= this.now().getTime()) {
      this.logins.delete(id);
      return undefined;
    }
    return login;
  }

  /** Ends a login (log out); true when there was one. */
  end(id: string): boolean {
    return this.logins.delete(id);
  }

  /** Ends every login of a token (for when tokens can be revoked). */
  endAllOf(tokenId: string): number {
    let ended = 0;
    for (const [id, login] of this.logins) {
      if (login.grant.tokenId === tokenId && this.logins.delete(id)) ended += 1;
    }
    return ended;
  }

  /** How many logins are live. */
  get size(): number {
    this.removeExpired();
    return this.logins.size;
  }

  private removeExpired(): void {
    const now = this.now().getTime();
    for (const [id, login] of this.logins) if (login.expiresAt.getTime() <= now) this.logins.delete(id);
  }
}
