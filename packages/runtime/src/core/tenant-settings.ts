/** Per-tenant settings (quotas), changed by an admin and audited on the system chain. */
import type { AuditLog } from '../audit/audit-log.js';
import type { Clock } from './clock.js';
import { AirlockError } from './errors.js';
import type { Store } from './store.js';
import { imageGiven, TENANT_NAME_PATTERN, UNLIMITED, type TenantQuotas, type TenantRecord } from './tenancy.js';

/** A tenant as the API shows it: `updatedAt` is null for a tenant nobody configured. */
export interface TenantView {
  name: string;
  quotas: TenantQuotas;
  /** the images its sessions may use; null: every image */
  images: string[] | null;
  updatedAt: string | null;
}

/** What `set` changes: some quotas (null removes a limit), and the images given (null: every image). */
export type TenantChanges = Partial<TenantQuotas> & { images?: string[] | null };

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
    return record ? { ...record, images: record.images ?? null } : { name, quotas: UNLIMITED, images: null, updatedAt: null };
  }

  /** Tenants with settings. */
  async list(): Promise<TenantView[]> {
    return (await this.store.listTenants()).map((record) => ({ ...record, images: record.images ?? null }));
  }

  /** True when sessions of `tenant` may use the image (a tenant nobody configured may use every one). */
  async imageGiven(tenant: string, image: string): Promise<boolean> {
    return imageGiven(await this.store.getTenant(tenant), image);
  }

  /** Changes the given quotas (null removes a limit) and images; the others stay. */
  async set(name: string, changes: TenantChanges, by: string): Promise<TenantView> {
    checkName(name);
    const { images, ...quotas } = changes;
    for (const [key, value] of Object.entries(quotas)) {
      if (value !== null && (!Number.isSafeInteger(value) || value < 0)) {
        throw new AirlockError('INVALID_ARGUMENTS', `${key} must be a whole number from 0, or null for no limit (got ${JSON.stringify(value)})`, {
          details: { field: key },
        });
      }
    }
    return this.store.transaction(async (tx) => {
      const current = await tx.getTenant(name);
      const record: TenantRecord = {
        name,
        quotas: { ...(current?.quotas ?? UNLIMITED), ...quotas },
        images: images === undefined ? (current?.images ?? null) : images === null ? null : [...new Set(images)].sort(),
        updatedAt: this.clock.now().toISOString(),
      };
      await tx.putTenant(record);
      await this.audit.append(tx, { sessionId: '', type: 'tenant.updated', data: { tenant: name, quotas: record.quotas, images: record.images ?? null, by } });
      return { ...record, images: record.images ?? null };
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
