/**
 * Who is calling: turns a request into an identity, from a bearer token or
 * from a console login cookie (which also needs the login's CSRF header on
 * anything that changes state). The one place that reads credentials; routes
 * only ever see the identity.
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { AirlockError } from '../core/errors.js';
import type { ConsoleLogins, ConsoleLogin } from './console-logins.js';
import { EVERY_TENANT, type Role } from '../core/tenancy.js';
import type { ApiTokens } from '../core/api-tokens.js';

/** Name of the console's login cookie. */
export const LOGIN_COOKIE = 'airlock_login';
/** Header that carries the login's CSRF token on state-changing console requests. */
export const CSRF_HEADER = 'x-airlock-csrf';

/** What a token may do (the matrix: `api/access-rules.ts`, docs/security.md). */
export type { Role };

/** What a token was issued as: the part of an identity that does not depend on how it was presented. */
export interface TokenGrant {
  tokenId: string;
  /** the tenant whose sessions it reaches; '*' for every tenant */
  tenant: string;
  role: Role;
  /** a person-readable name, shown in the console and recorded as approver */
  name: string;
}

/** The authenticated caller of a request. */
export interface Identity extends TokenGrant {
  /** `token`: a bearer token on the request; `console`: a login cookie of the web console */
  kind: 'token' | 'console';
}

/** Finds the grant of a presented token, and tells whether a token still holds. */
export interface TokenDirectory {
  find(token: string): Promise<TokenGrant | undefined>;
  /** False once the token was revoked: console logins made with it end. */
  isLive(tokenId: string): Promise<boolean>;
}

/** The grant of the installation's first token: admin of every tenant. */
export const INSTALLATION_GRANT: TokenGrant = { tokenId: 'admin', tenant: EVERY_TENANT, role: 'admin', name: 'admin' };

/** The installation's first token (admin of every tenant), then the tokens made with `airlock tokens create`. */
export function installationTokens(token: string, issued?: Pick<ApiTokens, 'find' | 'isLive'>): TokenDirectory {
  const expected = Buffer.from(token);
  return {
    async find(presented) {
      const given = Buffer.from(presented);
      if (given.length === expected.length && timingSafeEqual(given, expected)) return INSTALLATION_GRANT;
      const found = await issued?.find(presented);
      if (!found) return undefined;
      // The admin role reaches every tenant; its recorded tenant is only a label.
      return { tokenId: found.id, tenant: found.role === 'admin' ? EVERY_TENANT : found.tenant, role: found.role, name: found.name };
    },
    async isLive(tokenId) {
      if (tokenId === INSTALLATION_GRANT.tokenId) return true;
      return (await issued?.isLive(tokenId)) ?? false;
    },
  };
}

/** Methods that never change state: a login cookie alone is enough for them. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The parts of a request that authentication reads. */
export type CredentialCarrier = Pick<FastifyRequest, 'method' | 'headers'> & { url?: string };

/** The E2B key of a request to the E2B API (`X-API-Key` on its control plane, `X-Access-Token` on its sandbox plane), if any. */
export function e2bKeyOf(request: CredentialCarrier): string | undefined {
  const url = request.url ?? '';
  if (url !== '/e2b' && !url.startsWith('/e2b/')) return undefined;
  const key = request.headers['x-api-key'] ?? request.headers['x-access-token'];
  return typeof key === 'string' ? key : undefined;
}

/** Resolves identities from requests. */
export class Authentication {
  constructor(
    private readonly tokens: TokenDirectory,
    readonly logins: ConsoleLogins,
  ) {}

  /** The grant of a token, or UNAUTHORIZED. */
  async grantOf(token: string): Promise<TokenGrant> {
    const grant = token.length > 0 ? await this.tokens.find(token) : undefined;
    if (!grant) throw new AirlockError('UNAUTHORIZED', 'wrong token: use the API token printed by `airlock serve` (also in the data dir)');
    return grant;
  }

  /**
   * The caller of a request. A bearer header wins over a cookie and is judged
   * alone; a cookie needs a live login, and its CSRF header on every method
   * that can change state.
   */
  async identify(request: CredentialCarrier): Promise<Identity> {
    const authorization = request.headers.authorization;
    const e2bKey = authorization === undefined ? e2bKeyOf(request) : undefined;
    if (e2bKey !== undefined) {
      const grant = await this.tokens.find(e2bKey);
      if (!grant) throw new AirlockError('UNAUTHORIZED', 'wrong E2B key: use a key made with `airlock tokens create --tenant NAME --role operator --e2b`');
      return { kind: 'token', ...grant };
    }
    if (authorization !== undefined) {
      const grant = authorization.startsWith('Bearer ') ? await this.tokens.find(authorization.slice(7)) : undefined;
      if (!grant) throw missingToken();
      return { kind: 'token', ...grant };
    }
    const loginId = cookieValue(request.headers.cookie, LOGIN_COOKIE);
    if (loginId === undefined) throw missingToken();
    const login = this.logins.find(loginId);
    // A revoked token ends its logins at once, on whichever server they were made.
    if (login && !(await this.tokens.isLive(login.grant.tokenId))) this.logins.endAllOf(login.grant.tokenId);
    if (!login || !this.logins.find(loginId)) {
      throw new AirlockError('LOGIN_EXPIRED', 'your console login expired or was ended; log in again with the API token', { details: { relogin: '/login' } });
    }
    if (!SAFE_METHODS.has(request.method.toUpperCase()) && !csrfMatches(request.headers[CSRF_HEADER], login)) {
      throw new AirlockError(
        'CSRF_REJECTED',
        `a ${request.method} with the console's login cookie must carry the ${CSRF_HEADER} header of that login; reload the console, or call the API with a bearer token`,
      );
    }
    return { kind: 'console', ...login.grant };
  }

  /** The console login behind a request's cookie, if it is live. */
  loginOf(request: CredentialCarrier): ConsoleLogin | undefined {
    const loginId = cookieValue(request.headers.cookie, LOGIN_COOKIE);
    return loginId === undefined ? undefined : this.logins.find(loginId);
  }
}

function missingToken(): AirlockError {
  return new AirlockError('UNAUTHORIZED', 'missing or wrong bearer token: set AIRLOCK_TOKEN to the token in the data dir (printed by `airlock serve`)');
}

function csrfMatches(header: string | string[] | undefined, login: ConsoleLogin): boolean {
  if (typeof header !== 'string') return false;
  const given = Buffer.from(header);
  const expected = Buffer.from(login.csrfToken);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The value of one cookie in a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const separator = part.indexOf('=');
    if (separator < 0) continue;
    if (part.slice(0, separator).trim() === name) return part.slice(separator + 1).trim();
  }
  return undefined;
}

/**
 * Who decided, as recorded in an approval, a takeover and the audit: the
 * authenticated identity and nothing a request body says (a body's `by` is
 * ignored). The token id is part of it unless it is the name already.
 */
export function approverName(identity: Identity): string {
  const who = identity.name === identity.tokenId ? identity.name : `${identity.name} (${identity.tokenId})`;
  return `${identity.kind}:${who}`;
}

/** The identity authentication attached to a request (set by the server's onRequest hook). */
export function identityOf(request: FastifyRequest): Identity {
  const identity = (request as FastifyRequest & { identity?: Identity }).identity;
  if (!identity) throw new AirlockError('UNAUTHORIZED', 'this route needs an authenticated caller');
  return identity;
}

/** Attaches an identity to a request. */
export function attachIdentity(request: FastifyRequest, identity: Identity): void {
  (request as FastifyRequest & { identity?: Identity }).identity = identity;
}
