/**
 * The persistence port of the control plane. Asynchronous, so that one core
 * serves the embedded store (SQLite) and a shared one (PostgreSQL) alike.
 * Writes happen only inside `transaction(async (tx) => …)`, through the
 * explicit transaction object: a call site that awaits the transaction knows
 * that everything it wrote there is durable, together or not at all. See
 * docs/decisions/0002-asynchronous-store.md.
 */
import type { SessionRecord, SessionState } from './session.js';
import type { AuditHead, AuditRecord } from '../audit/audit-record.js';
import type { ApprovalRecord, ApprovalState } from './approval.js';
import type { SnapshotRecord } from './snapshot.js';
import type { NodeRecord, NodeState } from './cluster-node.js';
import type { ApiTokenRecord, TenantRecord } from './tenancy.js';
import type { WebhookDeliveryRecord, WebhookEndpointRecord } from './webhook.js';

/** Filters for listing sessions. */
export interface SessionQuery {
  states?: SessionState[];
  tenant?: string;
  /** only sessions managed by this server (see SessionRecord.owner) */
  owner?: string;
}

/** Filters for reading a session's audit chain. */
export interface AuditQuery {
  afterSeq?: number;
  limit?: number;
  types?: string[];
}

/** Filters for listing approvals. */
export interface ApprovalQuery {
  sessionId?: string;
  states?: ApprovalState[];
}

/** What the store was asked to remember beyond records: small named values (e.g. the audit key's id). */
export type StoreSetting = 'audit-key-id';

/** Reads, inside or outside a transaction. Outside, each read sees the last committed state. */
export interface StoreReader {
  getSession(id: string): Promise<SessionRecord | undefined>;
  listSessions(query?: SessionQuery): Promise<SessionRecord[]>;
  listAudit(sessionId: string, query?: AuditQuery): Promise<AuditRecord[]>;
  /** The chain head as recorded beside the chain (seq 0 and the genesis hash when empty). */
  auditHead(sessionId: string): Promise<AuditHead>;
  /** Sessions that have at least one audit record (the system chain '' included). */
  listAuditedSessions(): Promise<string[]>;
  getApproval(id: string): Promise<ApprovalRecord | undefined>;
  listApprovals(query?: ApprovalQuery): Promise<ApprovalRecord[]>;
  getSnapshot(id: string): Promise<SnapshotRecord | undefined>;
  listSnapshots(query?: { sessionId?: string }): Promise<SnapshotRecord[]>;
  getSetting(name: StoreSetting): Promise<string | undefined>;
  /** Every node that ever joined (those that left included), by id. */
  listNodes(): Promise<NodeRecord[]>;
  getNode(id: string): Promise<NodeRecord | undefined>;
  getToken(id: string): Promise<ApiTokenRecord | undefined>;
  /** The token whose secret hashes to `secretHash` (revoked ones included: the caller decides). */
  findTokenBySecretHash(secretHash: string): Promise<ApiTokenRecord | undefined>;
  /** Every token, oldest first. */
  listTokens(): Promise<ApiTokenRecord[]>;
  getTenant(name: string): Promise<TenantRecord | undefined>;
  /** Tenants with settings, by name. */
  listTenants(): Promise<TenantRecord[]>;
}

/** One transaction: reads see its own writes; nothing is visible to others before it commits. */
export interface StoreTransaction extends StoreReader {
  /** The session, locked against other transactions until this one ends. */
  lockSession(id: string): Promise<SessionRecord | undefined>;
  insertSession(session: SessionRecord): Promise<void>;
  /**
   * Compare-and-set: writes `next` only if the stored record still has
   * version `next.version - 1` and a lease epoch no newer than `next.epoch`
   * (fencing: a node that lost the session's lease cannot write it). False
   * when another writer got there first.
   */
  replaceSession(next: SessionRecord): Promise<boolean>;
  /** The chain head, locked so that appends to one chain never interleave. */
  lockAuditHead(sessionId: string): Promise<AuditHead>;
  /** Stores a record the audit log computed and moves the head to it. */
  insertAuditRecord(record: AuditRecord): Promise<void>;
  insertApproval(approval: ApprovalRecord): Promise<void>;
  /** Moves an approval from `from` to its new state atomically; false when it was not in `from`. */
  transitionApproval(id: string, from: ApprovalState, next: ApprovalRecord): Promise<boolean>;
  insertSnapshot(snapshot: SnapshotRecord): Promise<void>;
  updateSnapshot(snapshot: SnapshotRecord): Promise<void>;
  setSetting(name: StoreSetting, value: string): Promise<void>;
  /** Registers a node or replaces its whole record (a node joining). */
  putNode(node: NodeRecord): Promise<void>;
  /** Renews a node's heartbeat, leaving its state as it is; false when no such node. */
  touchNode(id: string, heartbeatAt: string): Promise<boolean>;
  /** Changes a node's state (drain, leave), leaving its heartbeat as it is; false when no such node. */
  setNodeState(id: string, state: NodeState): Promise<boolean>;
  insertToken(token: ApiTokenRecord): Promise<void>;
  /** Replaces a token's record (revocation, last use); false when there is no such token. */
  updateToken(token: ApiTokenRecord): Promise<boolean>;
  /** Creates or replaces a tenant's settings. */
  putTenant(tenant: TenantRecord): Promise<void>;
  /** Webhook endpoints and their outbox (see WebhookStore). */
  readonly webhooks: WebhookStore;
  /** Runs `callback` once the transaction committed (never when it rolls back). */
  afterCommit(callback: () => void): void;
}

/** The webhook outbox inside a transaction (issue 24): endpoints, per-session scan marks, deliveries. */
export interface WebhookStore {
  insertEndpoint(endpoint: WebhookEndpointRecord): Promise<void>;
  /** Replaces an endpoint's record; false when there is no such endpoint. */
  updateEndpoint(endpoint: WebhookEndpointRecord): Promise<boolean>;
  /** Removes an endpoint and its deliveries; false when there was no such endpoint. */
  deleteEndpoint(id: string): Promise<boolean>;
  getEndpoint(id: string): Promise<WebhookEndpointRecord | undefined>;
  /** Every endpoint, oldest first. */
  listEndpoints(): Promise<WebhookEndpointRecord[]>;
  /** The last audit seq of a session already turned into deliveries (0 when none). */
  scanMark(sessionId: string): Promise<number>;
  /** Moves the mark forward to `seq`; never back. */
  advanceScanMark(sessionId: string, seq: number): Promise<void>;
  /** Enqueues a delivery; false (and nothing written) when one for the same endpoint, session and seq exists. */
  insertDelivery(delivery: WebhookDeliveryRecord): Promise<boolean>;
  getDelivery(id: string): Promise<WebhookDeliveryRecord | undefined>;
  /**
   * Pending deliveries due at `now` that nobody holds a lease on, each the
   * earliest pending one of its endpoint and session (order per session).
   */
  listDueDeliveries(now: string, limit: number): Promise<WebhookDeliveryRecord[]>;
  /** Compare-and-set: takes the lease on a pending delivery whose lease expired by `now`; false when another node holds it. */
  claimDelivery(id: string, owner: string, now: string, leaseUntil: string): Promise<boolean>;
  /** Writes an attempt's outcome, only while `delivery.leaseOwner`'s lease is still the stored one; false otherwise. */
  finishAttempt(delivery: WebhookDeliveryRecord, heldBy: string): Promise<boolean>;
  /** How many deliveries of an endpoint are in each state. */
  countDeliveries(endpointId: string): Promise<Record<string, number>>;
}

/** Something another writer (this process or another server on the same database) committed. */
export type StoreChange =
  | { kind: 'approval'; approvalId: string; sessionId: string; state: ApprovalState }
  /** records firstSeq..seq of a chain were appended */
  | { kind: 'audit'; sessionId: string; firstSeq: number; seq: number }
  /** changes may have been missed (the feed reconnected): listeners look again at what they track */
  | { kind: 'resync' };

/** Durable state of the control plane. */
export interface Store extends StoreReader {
  /** 'sqlite' (embedded, one server) or 'postgres' (shared by servers) */
  readonly kind: 'sqlite' | 'postgres';
  /**
   * Runs `work` in one transaction; its writes commit together or none do.
   * Work must only touch the store through `tx` (no sandbox, no network): a
   * transaction that hits a deadlock or serialization failure is retried
   * whole. Transactions do not nest.
   */
  transaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T>;
  /** Hears committed changes, also those of other servers sharing the database; returns the unsubscribe. */
  watch(listener: (change: StoreChange) => void): () => void;
  close(): Promise<void>;
}
