/** Per-tenant settings (quotas), changed by an admin and audited on the system chain. */
import type { AuditLog } from '../audit/audit-log.js';
import type { Clock } from './clock.js';
import { AirlockError } from './errors.js';
import type { Store } from './store.js';
import { TENANT_NAME_PATTERN, UNLIMITED, type TenantQuotas, type TenantRecord } from './tenancy.js';

/** A tenant as the API shows it: `updatedAt` is null for a tenant nobody configured. */
export interface TenantView {
  name: string;
  quotas: TenantQuotas;
  updatedAt: string | null;
}

/** Reads and changes tenants' settings. */
export class TenantSettings {
  constructor(
    private readonly store: Store,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  /** The quotas of a tenant (no record: no limits). */
  async quotasOf(tenant: string): Promise<TenantQuotas> {
    return (await this.store.getTenant(tenant))?.quotas ?? UNLIMITED;
  }

  /** A tenant's settings. */
  async get(name: string): Promise<TenantView> {
    checkName(name);
    const record = await this.store.getTenant(name);
    return record ?? { name, quotas: UNLIMITED, updatedAt: null };
  }

  /** Tenants with settings. */
  async list(): Promise<TenantRecord[]> {
    return this.store.listTenants();
  }

  /** Changes the given quotas (null removes a limit); the others stay. */
  async set(name: string, changes: Partial<TenantQuotas>, by: string): Promise<TenantRecord> {
    checkName(name);
    for (const [key, value] of Object.entries(changes)) {
      if (value !== null && (!Number.isSafeInteger(value) || value < 0)) {
        throw new AirlockError('INVALID_ARGUMENTS', `${key} must be a whole number from 0, or null for no limit (got ${JSON.stringify(value)})`, {
          details: { field: key },
        });
      }
    }
    return this.store.transaction(async (tx) => {
      const current = (await tx.getTenant(name))?.quotas ?? UNLIMITED;
      const record: TenantRecord = { name, quotas: { ...current, ...changes }, updatedAt: this.clock.now().toISOString() };
      await tx.putTenant(record);
      await this.audit.append(tx, { sessionId: '', type: 'tenant.updated', data: { tenant: name, quotas: record.quotas, by } });
      return record;
    });
  }
}

function checkName(name: string): void {
  if (!TENANT_NAME_PATTERN.test(name)) {
    throw new AirlockError(
      'INVALID_ARGUMENTS',
      `${JSON.stringify(name)} is not a tenant name: use 1-128 letters, digits or . _ : @ - (as in a contract's identity.tenant)`,
      { details: { field: 'tenant' } },
    );
  }
}
