/**
 * Logins of the web console: a random server-side id in an HttpOnly cookie
 * stands for a token that was presented once, so the token itself never sits
 * in the browser. Kept in memory: a restart of the server logs everyone out,
 * which costs a person one login and keeps no credential on disk.
 */
import { randomBytes } from 'node:crypto';
import type { TokenGrant } from './authentication.js';
import { AirlockError } from '../core/errors.js';

/** Default lifetime of a console login. */
export const DEFAULT_LOGIN_SECONDS = 12 * 3600;

/** At most this many logins of one token live at once; a new one ends that token's oldest, never another token's. */
export const MAX_LOGINS_PER_TOKEN = 32;

/** At most this many logins live at once, all tokens together: past it a login is refused (nobody else's is ended). */
export const MAX_LOGINS = 4096;

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
    // Oldest first: a Map iterates in insertion order.
    const ofToken = [...this.logins.values()].filter((login) => login.grant.tokenId === grant.tokenId);
    for (const login of ofToken.slice(0, Math.max(0, ofToken.length - MAX_LOGINS_PER_TOKEN + 1))) this.logins.delete(login.id);
    if (this.logins.size >= MAX_LOGINS) {
      throw new AirlockError('QUOTA_EXCEEDED', `${MAX_LOGINS} console logins are live on this server, the most it keeps; log out of unused consoles, or call the API with a bearer token`, {
        details: { cap: MAX_LOGINS },
      });
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
