/** Per-tenant quotas at the door and tenant settings, on a real SQLite store: exact under concurrency, per tenant, released once. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteStore } from '../../../src/stores/sqlite/sqlite-store.js';
import { TenantAdmission } from '../../../src/core/tenant-admission.js';
import { UNLIMITED, type TenantQuotas } from '../../../src/core/tenancy.js';
import { isAirlockError } from '../../../src/core/errors.js';
import { sampleSession } from '../../../src/stores/conformance/store-conformance-context.js';
import { TenantSettings } from '../../../src/core/tenant-settings.js';
import { AuditLog } from '../../../src/audit/audit-log.js';
import { systemClock } from '../../../src/core/clock.js';
import { randomBytes } from 'node:crypto';

async function bench(quotas: Record<string, Partial<TenantQuotas>>) {
  const dir = mkdtempSync('/tmp/airlock-admission-');
  const store = new SqliteStore(join(dir, 'a.db'));
  const admission = new TenantAdmission(store, async (tenant) => ({ ...UNLIMITED, ...quotas[tenant] }));
  return {
    store,
    admission,
    async close() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function quotaOf(error: unknown): string {
  assert.ok(isAirlockError(error, 'QUOTA_EXCEEDED'), `expected QUOTA_EXCEEDED, got ${String(error)}`);
  return String(error.details['quota']);
}

describe('tenant admission', () => {
  it('30 concurrent creates against maxSessions 5 (one live, one terminated) admit exactly 4, and a release makes room', async () => {
    const { store, admission, close } = await bench({ acme: { maxSessions: 5 } });
    try {
      await store.transaction(async (tx) => {
        await tx.insertSession(sampleSession({ tenant: 'acme', state: 'running' }));
        await tx.insertSession(sampleSession({ tenant: 'acme', state: 'terminated' }));
        await tx.insertSession(sampleSession({ tenant: 'other', state: 'running' }));
      });
      const results = await Promise.allSettled(Array.from({ length: 30 }, () => admission.reserveSessions('acme', 1)));
      const admitted = results.filter((result) => result.status === 'fulfilled');
      assert.equal(admitted.length, 4);
      for (const result of results) if (result.status === 'rejected') assert.equal(quotaOf(result.reason), 'maxSessions');
      await assert.rejects(admission.reserveSessions('acme', 1), { code: 'QUOTA_EXCEEDED' });
      const release = (admitted[0] as PromiseFulfilledResult<() => void>).value;
      release();
      release();
      const again = await admission.reserveSessions('acme', 1);
      await assert.rejects(admission.reserveSessions('acme', 1), { code: 'QUOTA_EXCEEDED' }, 'a second release of the same reservation frees nothing');
      again();
      await assert.rejects(admission.reserveSessions('acme', 2), { code: 'QUOTA_EXCEEDED' }, 'a fork of 2 needs room for both');
      (await admission.reserveSessions('other', 100))();
    } finally {
      await close();
    }
  });

  it('calls in flight: maxConcurrentCalls 3 admits 3, the 4th is refused until one ends; other tenants are not counted', async () => {
    const { admission, close } = await bench({ acme: { maxConcurrentCalls: 3 } });
    try {
      const results = await Promise.allSettled(Array.from({ length: 10 }, () => admission.enterCall('acme')));
      const admitted = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
      assert.equal(admitted.length, 3);
      for (const result of results) if (result.status === 'rejected') assert.equal(quotaOf(result.reason), 'maxConcurrentCalls');
      const others = await Promise.all(Array.from({ length: 10 }, () => admission.enterCall('other')));
      admitted[0]?.();
      admitted[0]?.();
      const next = await admission.enterCall('acme');
      await assert.rejects(admission.enterCall('acme'), { code: 'QUOTA_EXCEEDED' });
      for (const release of [next, ...admitted, ...others]) release();
    } finally {
      await close();
    }
  });

  it('forks: branches over maxForkBranches and branches deeper than maxForkDepth are refused', async () => {
    const { store, admission, close } = await bench({ acme: { maxForkBranches: 4, maxForkDepth: 2 } });
    try {
      const root = sampleSession({ tenant: 'acme' });
      const child = sampleSession({ tenant: 'acme', lineage: { parentSessionId: root.id, snapshotId: 'snap_1', branchIndex: 0 } });
      const grandchild = sampleSession({ tenant: 'acme', lineage: { parentSessionId: child.id, snapshotId: 'snap_2', branchIndex: 0 } });
      await store.transaction(async (tx) => {
        for (const session of [root, child, grandchild]) await tx.insertSession(session);
      });
      assert.equal(await admission.depthOf(grandchild), 2);
      await admission.checkFork(root, 4);
      await admission.checkFork(child, 1);
      assert.equal(quotaOf(await admission.checkFork(root, 5).catch((error: unknown) => error)), 'maxForkBranches');
      assert.equal(quotaOf(await admission.checkFork(grandchild, 1).catch((error: unknown) => error)), 'maxForkDepth');
    } finally {
      await close();
    }
  });
});

describe('tenant settings', () => {
  it('changes only what it is given, gives images, and audits each change on the system chain', async () => {
    const dir = mkdtempSync('/tmp/airlock-tenants-');
    const store = new SqliteStore(join(dir, 'a.db'));
    try {
      const settings = new TenantSettings(store, new AuditLog({ key: randomBytes(32), clock: systemClock }), systemClock);
      assert.deepEqual(await settings.get('acme'), { name: 'acme', quotas: UNLIMITED, images: null, updatedAt: null });
      assert.equal(await settings.imageGiven('acme', 'anything'), true, 'a tenant nobody configured may use every image');
      await settings.set('acme', { maxSessions: 3 }, 'token:admin');
      const changed = await settings.set('acme', { images: ['debian-bookworm', 'debian-bookworm'], maxForkDepth: 1 }, 'token:admin');
      assert.deepEqual(changed.quotas, { ...UNLIMITED, maxSessions: 3, maxForkDepth: 1 });
      assert.deepEqual(changed.images, ['debian-bookworm']);
      assert.equal(await settings.imageGiven('acme', 'debian-bookworm'), true);
      assert.equal(await settings.imageGiven('acme', 'debian-bookworm-desktop'), false);
      assert.deepEqual((await settings.set('acme', { maxSessions: null }, 'token:admin')).images, ['debian-bookworm'], 'images stay when not given');
      assert.equal((await settings.set('acme', { images: null }, 'token:admin')).images, null);
      await assert.rejects(settings.set('acme', { maxSessions: -1 }, 'token:admin'), { code: 'INVALID_ARGUMENTS' });
      await assert.rejects(settings.set('a/b', { maxSessions: 1 }, 'token:admin'), { code: 'INVALID_ARGUMENTS' });
      const audited = (await store.listAudit('')).filter((record) => record.type === 'tenant.updated');
      assert.equal(audited.length, 4);
      assert.equal(audited[0]?.data['by'], 'token:admin');
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
