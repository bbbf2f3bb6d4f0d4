/**
 * API tokens with a tenant and a role (issue 12, item 7): made, listed and
 * revoked by an admin, found by the hash of the presented secret on every
 * request. Nothing is cached between the store and a request, so a
 * revocation holds at once on every server sharing the store.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { AuditLog } from '../audit/audit-log.js';
import { AirlockError } from './errors.js';
import { newId } from './ids.js';
import type { Store } from './store.js';
import { ROLES, TENANT_NAME_PATTERN, type ApiTokenRecord, type Role } from './tenancy.js';
import type { Clock } from './clock.js';

/** Prefix of every token secret this server makes: a scanner can spot a leaked one. */
export const TOKEN_SECRET_PREFIX = 'airlock_';
/** Prefix of a token made as an E2B API key (`--e2b`): `e2b_` and 40 hex digits, the form E2B's clients expect. */
export const E2B_KEY_PREFIX = 'e2b_';
/** An E2B API key as this server makes it. */
export const E2B_KEY_PATTERN = /^e2b_[0-9a-f]{40}$/;

/** Last use is written at most this often per token and server. */
const LAST_USED_INTERVAL_MS = 60_000;

/** What a token shows in lists: never the secret nor its hash. */
export interface ApiTokenView {
  id: string;
  tenant: string;
  role: Role;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  revoked: boolean;
  revokedAt: string | null;
}

/** The hex SHA-256 of a secret, as stored. */
export function secretHashOf(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** A token as lists show it. */
export function tokenView(token: ApiTokenRecord): ApiTokenView {
  return {
    id: token.id,
    tenant: token.tenant,
    role: token.role,
    name: token.name,
    createdAt: token.createdAt,
    lastUsedAt: token.lastUsedAt,
    revoked: token.revokedAt !== null,
    revokedAt: token.revokedAt,
  };
}

/** The tokens of an installation (besides its first, admin token, which lives in the data dir). */
export class ApiTokens {
  private readonly lastWritten = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  /** Makes a token; the secret is returned once and never stored. */
  async create(input: { tenant: string; role?: Role; name?: string; e2b?: boolean }, createdBy: string): Promise<{ token: ApiTokenView; secret: string }> {
    if (!TENANT_NAME_PATTERN.test(input.tenant)) {
      throw new AirlockError(
        'INVALID_ARGUMENTS',
        `tenant ${JSON.stringify(input.tenant)} is not a tenant name: use 1-128 letters, digits or . _ : @ - (as in a contract's identity.tenant)`,
        { details: { field: 'tenant' } },
      );
    }
    const role = input.role ?? 'operator';
    if (!ROLES.includes(role)) {
      throw new AirlockError('INVALID_ARGUMENTS', `role must be one of ${ROLES.join(', ')} (got ${JSON.stringify(role)})`, { details: { field: 'role' } });
    }
    const id = newId('tok');
    // An E2B key is the same token (role, tenant, revocation, audit name) in the form E2B's clients send.
    const secret =
      input.e2b === true ? `${E2B_KEY_PREFIX}${randomBytes(20).toString('hex')}` : `${TOKEN_SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
    const record: ApiTokenRecord = {
      id,
      tenant: input.tenant,
      role,
      name: input.name ?? id,
      secretHash: secretHashOf(secret),
      createdAt: this.clock.now().toISOString(),
      lastUsedAt: null,
      revokedAt: null,
    };
    await this.store.transaction(async (tx) => {
      await tx.insertToken(record);
      await this.audit.append(tx, {
        sessionId: '',
        type: 'token.created',
        data: { tokenId: id, tenant: record.tenant, role, name: record.name, by: createdBy, ...(input.e2b === true ? { e2b: true } : {}) },
      });
    });
    return { token: tokenView(record), secret };
  }

  /** Every token, oldest first, revoked ones included. */
  async list(): Promise<ApiTokenView[]> {
    return (await this.store.listTokens()).map(tokenView);
  }

  /** Revokes a token: from the commit on, it answers 401. Revoking twice is refused. */
  async revoke(id: string, revokedBy: string): Promise<ApiTokenView> {
    return this.store.transaction(async (tx) => {
      const token = await tx.getToken(id);
      if (!token) throw new AirlockError('TOKEN_NOT_FOUND', `no token ${id}; list them with \`airlock tokens ls\``, { details: { tokenId: id } });
      if (token.revokedAt !== null)
        throw new AirlockError('INVALID_STATE', `token ${id} was revoked at ${token.revokedAt} already`, { details: { tokenId: id } });
      const revoked = { ...token, revokedAt: this.clock.now().toISOString() };
      await tx.updateToken(revoked);
      await this.audit.append(tx, { sessionId: '', type: 'token.revoked', data: { tokenId: id, tenant: token.tenant, role: token.role, by: revokedBy } });
      return tokenView(revoked);
    });
  }

  /** The live (not revoked) token with this secret, or undefined. */
  async find(secret: string): Promise<ApiTokenRecord | undefined> {
    if (!secret.startsWith(TOKEN_SECRET_PREFIX) && !E2B_KEY_PATTERN.test(secret)) return undefined;
    const token = await this.store.findTokenBySecretHash(secretHashOf(secret));
    if (!token || token.revokedAt !== null) return undefined;
    this.noteUse(token);
    return token;
  }

  /** True while the token exists and is not revoked (console logins ask on every request). */
  async isLive(id: string): Promise<boolean> {
    const token = await this.store.getToken(id);
    return token !== undefined && token.revokedAt === null;
  }

  /** Records the last use, off the request's path and at most once a minute. */
  private noteUse(token: ApiTokenRecord): void {
    const now = this.clock.now();
    const last = this.lastWritten.get(token.id) ?? 0;
    if (now.getTime() - last < LAST_USED_INTERVAL_MS) return;
    this.lastWritten.set(token.id, now.getTime());
    void this.store
      .transaction(async (tx) => {
        const current = await tx.getToken(token.id);
        if (current && current.revokedAt === null) await tx.updateToken({ ...current, lastUsedAt: now.toISOString() });
      })
      .catch(() => this.lastWritten.delete(token.id));
  }
}
