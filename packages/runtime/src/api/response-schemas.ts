/**
 * Schemas of what the API answers. They feed the OpenAPI document, from
 * which the SDK's types are generated (packages/sdk/src/generated); a test
 * fails when the generated types drift from this file.
 */
import { z } from 'zod';

const decision = z.object({
  decision: z.enum(['allow', 'deny', 'ask']),
  policyIds: z.array(z.string()),
  reason: z.string(),
  errors: z.array(z.string()),
  enforced: z.boolean(),
});

const timing = z.object({ queuedMs: z.number(), resumeMs: z.number(), startMs: z.number(), runMs: z.number(), totalMs: z.number() });

const errorValue = z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()) });

const toolCallOutcome = z.discriminatedUnion('status', [
  z.object({ status: z.literal('completed'), callId: z.string(), tool: z.string(), result: z.record(z.string(), z.unknown()), decision, timing }),
  z.object({ status: z.literal('refused'), callId: z.string(), tool: z.string(), error: errorValue, decision: decision.nullable() }),
  z.object({ status: z.literal('pending-approval'), callId: z.string(), tool: z.string(), approvalId: z.string(), decision }),
]);

const meters = z.object({
  toolCalls: z.number(),
  cpuSeconds: z.number(),
  peakMemoryBytes: z.number(),
  memoryByteSeconds: z.number(),
  timeWeightedMemoryBytes: z.number(),
  runningSeconds: z.number(),
  pausedSeconds: z.number(),
  suspendedSeconds: z.number(),
  idleFractionUnpaid: z.number(),
  diskBytes: z.number(),
  snapshotBytes: z.number(),
  /** lifetime of per-call sandboxes, summed */
  perCallSeconds: z.number().optional(),
});

const idlePolicy = z.object({ pauseAfterSeconds: z.number(), suspendAfterSeconds: z.number(), keepAwake: z.boolean() });

const exposedPort = z.object({ port: z.number(), path: z.string(), url: z.string() });

const session = z
  .object({
    id: z.string(),
    state: z.enum(['creating', 'running', 'paused', 'suspended', 'degraded', 'terminated', 'failed']),
    /** the node that holds the session's lease: runs its machine, keeps its disk */
    node: z.string(),
    mode: z.enum(['machine', 'per-call']),
    /** the sandbox driver of the session's machines: gvisor or microvm */
    sandbox: z.string(),
    pendingOperation: z.string().nullable(),
    image: z.object({ name: z.string(), digest: z.string() }),
    tenant: z.string(),
    principal: z.string(),
    contractVersion: z.number(),
    resources: z.object({ cpus: z.number(), memoryMb: z.number(), diskMb: z.number(), maxProcesses: z.number() }).catchall(z.unknown()),
    sandboxId: z.string().nullable(),
    snapshotId: z.string().nullable(),
    lineage: z.object({ parentSessionId: z.string(), snapshotId: z.string(), branchIndex: z.number() }).nullable(),
    /** NODE_LOST: the machine died with its node; lastSnapshotId/lastSnapshotAt name the snapshot to continue from */
    failure: z.object({ code: z.string(), message: z.string(), lastSnapshotId: z.string().optional(), lastSnapshotAt: z.string().optional() }).nullable(),
    guard: z.object({ tripped: z.object({ callKey: z.string(), at: z.string(), count: z.number() }).nullable() }),
    createdAt: z.string(),
    updatedAt: z.string(),
    stateSince: z.string(),
    lastActivityAt: z.string(),
    meters,
    /** when an idle machine pauses and suspends; null for per-call sessions */
    idle: idlePolicy.nullable().optional(),
    exposedPorts: z.array(z.number()).optional(),
    /** the tools the session's contract allows; a call of any other is denied */
    tools: z.array(z.string()),
  })
  .catchall(z.unknown());

const toolCall = z.object({ id: z.string(), sessionId: z.string(), tool: z.string(), arguments: z.record(z.string(), z.unknown()), receivedAt: z.string() });

const approval = z.object({
  id: z.string(),
  sessionId: z.string(),
  state: z.enum(['pending', 'approved', 'denied', 'expired', 'executed']),
  call: toolCall,
  policyIds: z.array(z.string()),
  reason: z.string(),
  createdAt: z.string(),
  expiresAt: z.string(),
  decidedAt: z.string().nullable(),
  decidedBy: z.string().nullable(),
  decisionReason: z.string().nullable(),
  outcome: toolCallOutcome.optional(),
});

const auditRecord = z.object({
  sessionId: z.string(),
  seq: z.number(),
  at: z.string(),
  type: z.string(),
  data: z.record(z.string(), z.unknown()),
  prevHash: z.string(),
  hash: z.string(),
});

const auditVerification = z.object({
  sessionId: z.string(),
  ok: z.boolean(),
  records: z.number(),
  /** keyed: every record carries an HMAC under the audit key; legacy: none does (integrity only); mixed: legacy records, then keyed ones */
  authenticity: z.enum(['keyed', 'legacy', 'mixed', 'none']),
  /** the last head kept outside the database that the chain was checked against */
  anchoredSeq: z.number().nullable(),
  note: z.string().optional(),
  problem: z.object({ seq: z.number(), kind: z.string(), message: z.string() }).optional(),
});

/** Every chain at once (`GET /v1/audit/verify`). */
const auditReport = z.object({
  ok: z.boolean(),
  /** chains checked: every one in the database, and every one the head file outside it names */
  chains: z.number(),
  /** the chains that failed ('' is the system chain); missing: the database lost it whole, the head file still names it */
  failed: z.array(auditVerification.extend({ missing: z.boolean() })),
  /** ids of the chains the database lost */
  missing: z.array(z.string()),
});

const fileInfo = z.object({
  name: z.string(),
  path: z.string(),
  type: z.enum(['file', 'directory', 'symlink', 'other']),
  size: z.number(),
  mode: z.string(),
  modifiedAt: z.string(),
  target: z.string().optional(),
});

const image = z
  .object({
    name: z.string(),
    digest: z.string(),
    rootfsDir: z.string(),
    source: z.enum(['debootstrap', 'oci-archive']),
    sizeBytes: z.number(),
    createdAt: z.string(),
    env: z.record(z.string(), z.string()),
  })
  .catchall(z.unknown());

const snapshot = z.object({
  id: z.string(),
  name: z.string().nullable(),
  sessionId: z.string(),
  parentSnapshotId: z.string().nullable(),
  reason: z.enum(['suspend', 'manual', 'fork']),
  state: z.enum(['available', 'deleted', 'expired']),
  /** suspend snapshots hold memory only: their disk stays live with the session */
  contents: z.array(z.enum(['memory', 'disk'])),
  image: z.object({ name: z.string(), digest: z.string() }),
  contractVersion: z.number(),
  sizeBytes: z.number(),
  checksum: z.string(),
  createdAt: z.string(),
  expiresAt: z.string().nullable(),
  deletedAt: z.string().nullable(),
});

const node = z.object({
  id: z.string(),
  /** where other nodes reach its API (--advertise) */
  address: z.string(),
  /** active, draining, left, or lost (its heartbeat is older than the lease) */
  state: z.enum(['active', 'draining', 'left', 'lost']),
  /** sessions whose lease it holds (terminated ones excluded) */
  sessions: z.number(),
  heartbeatAt: z.string(),
});

const resources = z.object({ cpus: z.number(), memoryMb: z.number(), diskMb: z.number(), maxProcesses: z.number() });

const warmPool = z.object({
  /** machines kept ready per class (`--warm-pool`); 0: pools are off */
  size: z.number(),
  classes: z.array(
    z.object({
      driver: z.string(),
      imageName: z.string(),
      resources,
      ready: z.number(),
      starting: z.number(),
      /** creates served from this class's pool since the server started */
      claims: z.number(),
      /** creates of this class that found no machine ready (they started cold) */
      misses: z.number(),
    }),
  ),
  lastFailure: z.object({ code: z.string(), message: z.string(), at: z.string() }).optional(),
});

const forkBranchFailure = z.object({ index: z.number(), sessionId: z.string().nullable(), error: errorValue });

/** Named response schemas, as they appear under components.schemas. */
export const RESPONSE_SCHEMAS = {
  PolicyDecision: decision,
  CallTiming: timing,
  ToolCallOutcome: toolCallOutcome,
  SessionMeters: meters,
  Session: session,
  SessionList: z.object({ sessions: z.array(session) }),
  ToolCall: toolCall,
  Approval: approval,
  ApprovalList: z.object({ approvals: z.array(approval) }),
  AuditRecord: auditRecord,
  AuditLog: z.object({ sessionId: z.string(), records: z.array(auditRecord) }),
  AuditVerification: auditVerification,
  AuditReport: auditReport,
  FileInfo: fileInfo,
  Image: image,
  ImageList: z.object({ images: z.array(image) }),
  Snapshot: snapshot,
  SnapshotList: z.object({ snapshots: z.array(snapshot) }),
  ForkBranchFailure: forkBranchFailure,
  ForkResult: z.object({ snapshot, branches: z.array(z.union([session, forkBranchFailure])) }),
  Node: node,
  NodeList: z.array(node),
  WarmPool: warmPool,
  ExposedPort: exposedPort,
  ExposedPortList: z.object({ sessionId: z.string(), ports: z.array(exposedPort) }),
  SessionContract: z.object({ sessionId: z.string(), version: z.number(), contract: z.record(z.string(), z.unknown()) }),
  Login: z.object({
    identity: z.object({
      kind: z.enum(['token', 'console']),
      tokenId: z.string(),
      tenant: z.string(),
      role: z.enum(['admin', 'operator', 'approver', 'agent', 'metrics']),
      name: z.string(),
    }),
    csrfToken: z.string().nullable(),
    expiresAt: z.string().nullable(),
  }),
} as const;
