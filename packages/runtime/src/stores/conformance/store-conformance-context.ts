/**
 * What a store's test file hands to the Store conformance suite, and the
 * records the cases build. The suite knows nothing about SQL: everything it
 * checks goes through the Store port.
 */
import type { Store } from '../../core/store.js';
import type { SessionRecord } from '../../core/session.js';
import { newSessionRecord } from '../../core/session.js';
import type { SessionContract } from '../../core/session-contract.js';
import type { ApprovalRecord } from '../../core/approval.js';
import type { SnapshotRecord } from '../../core/snapshot.js';
import type { SessionRecords } from '../../core/session-records.js';
import type { ToolPipeline } from '../../core/tool-pipeline.js';
import type { ApprovalService } from '../../core/approval-service.js';
import type { AuditLog } from '../../audit/audit-log.js';
import type { SandboxDriver } from '../../core/sandbox-driver.js';

/** The core over a store, with the fake driver, for cases that need the pipeline. */
export interface ConformanceCore {
  records: SessionRecords;
  pipeline: ToolPipeline;
  approvals: ApprovalService;
  audit: AuditLog;
  driver: SandboxDriver & { execs: { argv: string[] }[] };
  /** a contract with the given extra keys, parsed */
  contract(extra?: Record<string, unknown>): SessionContract;
  /** creates a running session */
  createSession(contract: SessionContract): Promise<SessionRecord>;
  /** waits for background work (approved calls, samples) and stops it */
  close(): Promise<void>;
}

/** The store side of a suite run. */
export interface StoreConformanceContext {
  /** A fresh, empty store. */
  open(): Promise<Store>;
  /** A second handle on the database of `store`, as another server would have; absent when the store serves one process only. */
  openPeer?(store: Store): Promise<Store>;
  /** Why `openPeer` is absent (printed with the skipped cases). */
  noPeerReason?: string;
  /** The core over `store` (and a shared audit key), for cases that need the pipeline or approvals. */
  core(store: Store): Promise<ConformanceCore>;
  /** Releases everything the context made; called once after the suite. */
  dispose(): Promise<void>;
}

let counter = 0;

/** A unique id with a prefix. */
export function uniqueId(prefix: string): string {
  counter += 1;
  return `${prefix}_conf${Date.now().toString(36)}${counter.toString(36).padStart(4, '0')}`;
}

/** A session record as a server would insert it. */
export function sampleSession(overrides: Partial<SessionRecord> = {}): SessionRecord {
  const contract = {
    version: 1,
    identity: { tenant: 'acme', principal: 'agent' },
    tools: ['exec'],
    policies: [{ id: 'p', text: 'permit(principal, action, resource);' }],
  } as unknown as SessionContract;
  const record = newSessionRecord(
    overrides.id ?? uniqueId('ses'),
    {
      owner: 'srv_a',
      mode: 'machine',
      tenant: 'acme',
      principal: 'agent',
      imageName: 'debian-bookworm',
      imageDigest: 'sha256:abc',
      contractVersion: 1,
      contract,
      resources: { cpus: 1, memoryMb: 512, diskMb: 2048, maxProcesses: 256 },
      generation: 1,
      lineage: null,
    },
    new Date().toISOString(),
  );
  return { ...record, ...overrides };
}

/** An approval as the approval service parks it. */
export function sampleApproval(sessionId: string, overrides: Partial<ApprovalRecord> = {}): ApprovalRecord {
  const now = new Date();
  return {
    id: uniqueId('apr'),
    sessionId,
    state: 'pending',
    call: { id: uniqueId('call'), sessionId, tool: 'exec', arguments: { argv: ['tar', 'cf', 'a.tar', '.'] }, receivedAt: now.toISOString() },
    policyIds: ['ask-tar'],
    reason: 'tar needs a human',
    createdAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + 3_600_000).toISOString(),
    decidedAt: null,
    decidedBy: null,
    decisionReason: null,
    ...overrides,
  };
}

/** A snapshot record. */
export function sampleSnapshot(sessionId: string, overrides: Partial<SnapshotRecord> = {}): SnapshotRecord {
  const id = overrides.id ?? uniqueId('snap');
  return {
    id,
    sessionId,
    name: null,
    parentSnapshotId: null,
    imageName: 'debian-bookworm',
    imageDigest: 'sha256:abc',
    contractVersion: 1,
    reason: 'manual',
    path: `/var/lib/airlock/snapshots/${id}`,
    sizeBytes: 1234,
    checksum: 'sha256:0000',
    createdAt: new Date().toISOString(),
    expiresAt: null,
    deletedAt: null,
    ...overrides,
  };
}
