/**
 * Moving up: copies everything a stopped server kept in one store (sessions,
 * approvals, snapshot records, every audit chain as written, settings) into
 * another, in one transaction of the target, then verifies every chain there
 * against the audit key and the heads kept outside the database. Records are
 * copied as they are, so hashes, heads and versions stay valid; sessions
 * from before owners existed become the copying data dir's.
 */
import { AirlockError } from '../core/errors.js';
import type { Store } from '../core/store.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { ChainVerification } from '../audit/hash-chain.js';

/** What a copy did. */
export interface StoreCopyReport {
  sessions: number;
  approvals: number;
  snapshots: number;
  chains: number;
  records: number;
  /** every chain verified on the target, in order; a failed one makes the copy fail */
  verified: { sessionId: string; result: ChainVerification }[];
}

/** Copies `from` into the empty store `to` and verifies every chain there. */
export async function copyStore(from: Store, to: Store, options: { audit: AuditLog; owner: string }): Promise<StoreCopyReport> {
  const [existingSessions, existingChains] = await Promise.all([to.listSessions(), to.listAuditedSessions()]);
  if (existingSessions.length > 0 || existingChains.length > 0) {
    throw new AirlockError(
      'INVALID_STATE',
      `the target store already holds ${existingSessions.length} sessions and ${existingChains.length} audit chains; copy into an empty database (its chains and this one's cannot be merged)`,
    );
  }
  const sessions = await from.listSessions();
  const approvals = await from.listApprovals();
  const snapshots = await from.listSnapshots();
  const chains = await from.listAuditedSessions();
  const keyId = await from.getSetting('audit-key-id');
  // Tokens (hashes only) and tenant quotas move too: a copied installation keeps its callers and limits.
  const [tokens, tenants] = await Promise.all([from.listTokens(), from.listTenants()]);
  let records = 0;
  await to.transaction(async (tx) => {
    for (const session of sessions) await tx.insertSession(session.owner === '' ? { ...session, owner: options.owner } : session);
    for (const approval of approvals) await tx.insertApproval(approval);
    for (const snapshot of snapshots) await tx.insertSnapshot(snapshot);
    for (const sessionId of chains) {
      for (const record of await from.listAudit(sessionId)) {
        await tx.insertAuditRecord(record);
        records += 1;
      }
    }
    if (keyId !== undefined) await tx.setSetting('audit-key-id', keyId);
    for (const token of tokens) await tx.insertToken(token);
    for (const tenant of tenants) await tx.putTenant(tenant);
  });
  const known = new Set(sessions.map((session) => session.id));
  const verified: StoreCopyReport['verified'] = [];
  for (const sessionId of chains) {
    const result = await options.audit.verify(to, sessionId, { mustHaveRecords: known.has(sessionId) });
    verified.push({ sessionId, result });
  }
  return { sessions: sessions.length, approvals: approvals.length, snapshots: snapshots.length, chains: chains.length, records, verified };
}
