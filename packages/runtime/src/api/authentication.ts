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

/** Name of the console's login cookie. */
export const LOGIN_COOKIE = 'airlock_login';
/** Header that carries the login's CSRF token on state-changing console requests. */
export const CSRF_HEADER = 'x-airlock-csrf';

/** What a token may do. Only `admin` exists until tokens with tenants and roles land (issue 12). */
export type Role = 'admin' | 'operator' | 'approver' | 'agent';

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

/** Finds the grant of a presented token. A token table (issue 12) will be another implementation. */
export interface TokenDirectory {
  find(token: string): TokenGrant | undefined;
}

/** The installation's one token: admin of every tenant. */
export function installationTokens(token: string): TokenDirectory {
  const expected = Buffer.from(token);
  const grant: TokenGrant = { tokenId: 'admin', tenant: '*', role: 'admin', name: 'admin' };
  return {
    find(presented) {
      const given = Buffer.from(presented);
      return given.length === expected.length && timingSafeEqual(given, expected) ? grant : undefined;
    },
  };
}

/** Methods that never change state: a login cookie alone is enough for them. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The parts of a request that authentication reads. */
export type CredentialCarrier = Pick<FastifyRequest, 'method' | 'headers'>;

/** Resolves identities from requests. */
export class Authentication {
  constructor(
    private readonly tokens: TokenDirectory,
    readonly logins: ConsoleLogins,
  ) {}

  /** The grant of a token, or UNAUTHORIZED. */
  grantOf(token: string): TokenGrant {
    const grant = token.length > 0 ? this.tokens.find(token) : undefined;
    if (!grant) throw new AirlockError('UNAUTHORIZED', 'wrong token: use the API token printed by `airlock serve` (also in the data dir)');
    return grant;
  }

  /**
   * The caller of a request. A bearer header wins over a cookie and is judged
   * alone; a cookie needs a live login, and its CSRF header on every method
   * that can change state.
   */
  identify(request: CredentialCarrier): Identity {
    const authorization = request.headers.authorization;
    if (authorization !== undefined) {
      const grant = authorization.startsWith('Bearer ') ? this.tokens.find(authorization.slice(7)) : undefined;
      if (!grant) throw missingToken();
      return { kind: 'token', ...grant };
    }
    const loginId = cookieValue(request.headers.cookie, LOGIN_COOKIE);
    if (loginId === undefined) throw missingToken();
    const login = this.logins.find(loginId);
    if (!login) {
      throw new AirlockError('LOGIN_EXPIRED', 'your console login expired or was ended; log in again with the API token', { details: { relogin: '/login' } });
    }
    if (!SAFE_METHODS.has(request.method.toUpperCase()) && !csrfMatches(request.headers[CSRF_HEADER], login)) {
      throw new AirlockError('CSRF_REJECTED', `a ${request.method} with the console's login cookie must carry the ${CSRF_HEADER} header of that login; reload the console, or call the API with a bearer token`);
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
 * The approver recorded for a decision. A console login is recorded as its
 * identity and nothing the request body says; bearer callers may still label
 * the program that decided (the MCP server and SDK adapters do) until tokens
 * carry their own names (issue 12, item 7).
 */
export function approverName(identity: Identity, declaredBy: string | undefined): string {
  if (identity.kind === 'console') return `console:${identity.name}`;
  return declaredBy ?? `token:${identity.name}`;
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
