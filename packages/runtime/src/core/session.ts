/**
 * The session: one agent's isolated machine and everything recorded about it.
 * States follow DESIGN.md: creating → running ⇄ paused ⇄ suspended →
 * terminated, and failed. A lifecycle operation in progress is recorded as
 * `pendingOperation` before it touches the sandbox, so that a restart after a
 * crash knows what was half done.
 */
import type { SandboxHandle, SandboxResources } from './sandbox-driver.js';
import type { SessionContract } from './session-contract.js';
import { AirlockError } from './errors.js';

/** Lifecycle states of a session. */
/**
 * `degraded`: the machine is there but its command slot stopped answering (the agent wedged or gone);
 * calls are refused with the cause until `restart` starts a fresh machine on the same disk.
 */
export type SessionState = 'creating' | 'running' | 'paused' | 'suspended' | 'degraded' | 'terminated' | 'failed';

/** Operations that move a session between states; recorded while in flight. */
export type LifecycleOperation = 'create' | 'suspend' | 'resume' | 'pause' | 'unpause' | 'terminate' | 'resize' | 'restart';

/** How tool calls of a session execute. */
export type ExecutionMode = 'machine' | 'per-call';

/** Lineage of a forked session. */
export interface SessionLineage {
  parentSessionId: string;
  snapshotId: string;
  branchIndex: number;
}

/** Usage charged to a session. */
export interface SessionMeters {
  toolCalls: number;
  cpuSeconds: number;
  peakMemoryBytes: number;
  /** integral of memory over running time, in byte-seconds */
  memoryByteSeconds: number;
  /** when memory was last sampled, for the time integral */
  memorySampledAt?: string;
  /** CPU used by earlier sandbox incarnations (before the last restore) */
  cpuSecondsClosed: number;
  runningSeconds: number;
  pausedSeconds: number;
  suspendedSeconds: number;
  diskBytes: number;
  snapshotBytes: number;
  /** lifetime of per-call sandboxes (per-call sessions and ephemeral calls), summed; absent in older records */
  perCallSeconds?: number;
}

/** A session as stored. */
export interface SessionRecord {
  id: string;
  /** incremented by every write; a write names the version it read (compare-and-set) */
  version: number;
  /** the server (data dir) that manages the session's machine, disk and snapshots */
  owner: string;
  state: SessionState;
  pendingOperation: LifecycleOperation | null;
  mode: ExecutionMode;
  tenant: string;
  principal: string;
  imageName: string;
  imageDigest: string;
  contractVersion: number;
  /** the session contract, as validated at creation; a change is a new version */
  contract: SessionContract;
  resources: SandboxResources;
  sandbox: SandboxHandle | null;
  /** the sandbox driver (`gvisor`, `microvm`) of every machine of the session; absent in records before driver spec v2: gvisor */
  driver?: string;
  /** incremented on every start or restore; part of the sandbox id */
  generation: number;
  /** snapshot the session will resume from while suspended */
  resumeSnapshotId: string | null;
  lineage: SessionLineage | null;
  failure: { code: string; message: string } | null;
  createdAt: string;
  updatedAt: string;
  /** when the state last changed, for wall-time metering */
  stateSince: string;
  lastActivityAt: string;
  meters: SessionMeters;
  guard: GuardState;
  /** set by `airlock sessions keep-awake`: the idle sleeper leaves the machine running */
  keepAwake?: boolean;
  /** ports of the machine reachable through the server's proxy (`airlock ports expose`) */
  exposedPorts?: number[];
}

/** State of the runaway breaker of a session. */
export interface GuardState {
  /** identical consecutive failures per call key (bounded) */
  failures: Record<string, number>;
  /** set when a call key reached the contract's maxIdenticalFailures; a human resets it */
  tripped: { callKey: string; at: string; count: number } | null;
}

/** An entry of a session's event history. */
export interface SessionEvent {
  sessionId: string;
  seq: number;
  at: string;
  type: string;
  data: Record<string, unknown>;
}

/** What differs between new sessions; everything else starts the same for all. */
export type NewSessionFields = Pick<
  SessionRecord,
  'owner' | 'mode' | 'tenant' | 'principal' | 'imageName' | 'imageDigest' | 'contractVersion' | 'contract' | 'resources' | 'generation' | 'lineage' | 'driver'
>;

/** The record of a session about to be created: `creating`, with its create pending, no machine, empty meters. */
export function newSessionRecord(id: string, fields: NewSessionFields, now: string): SessionRecord {
  return {
    id,
    version: 1,
    state: 'creating',
    pendingOperation: 'create',
    ...fields,
    sandbox: null,
    resumeSnapshotId: null,
    failure: null,
    createdAt: now,
    updatedAt: now,
    stateSince: now,
    lastActivityAt: now,
    meters: emptyMeters(),
    guard: emptyGuard(),
  };
}

/** A fresh breaker. */
export function emptyGuard(): GuardState {
  return { failures: {}, tripped: null };
}

/** Empty meters for a new session. */
export function emptyMeters(): SessionMeters {
  return {
    toolCalls: 0,
    cpuSeconds: 0,
    peakMemoryBytes: 0,
    memoryByteSeconds: 0,
    cpuSecondsClosed: 0,
    runningSeconds: 0,
    pausedSeconds: 0,
    suspendedSeconds: 0,
    diskBytes: 0,
    snapshotBytes: 0,
  };
}

/** True for states from which no tool call can ever run again. */
export function isFinal(state: SessionState): boolean {
  return state === 'terminated';
}

/** Refuses an operation that needs a machine on a per-call session. */
export function requireMachine(session: SessionRecord, operation: string): void {
  if (session.mode === 'per-call') {
    throw new AirlockError('INVALID_STATE', `cannot ${operation} session ${session.id}: it runs each call in a fresh sandbox and has no machine`, {
      details: { sessionId: session.id, mode: session.mode },
    });
  }
}

/** Refuses a tool call on the machine of a session that cannot take one. */
export function requireCallable(session: SessionRecord): void {
  if (session.mode === 'per-call') requireMachine(session, 'run a call on the machine of');
  requireCallableState(session);
}

/** Refuses a tool call on a session being created or terminated, or already ended. */
export function requireCallableState(session: SessionRecord): void {
  if (session.state === 'creating' || session.pendingOperation === 'terminate') {
    throw new AirlockError('SESSION_BUSY', `session ${session.id} is being ${session.state === 'creating' ? 'created' : 'terminated'}; retry in a moment`, {
      details: { sessionId: session.id, state: session.state },
    });
  }
  if (session.state === 'degraded') {
    throw new AirlockError(
      'SESSION_DEGRADED',
      `session ${session.id} cannot run tool calls: its machine stopped answering (${session.failure?.message ?? 'unknown cause'}). Restart it with \`airlock sessions restart ${session.id}\` (a fresh machine on the same disk: files kept, processes lost), or terminate it`,
      { details: { sessionId: session.id, state: session.state, cause: session.failure?.code ?? null } },
    );
  }
  if (session.state === 'terminated' || session.state === 'failed') {
    const why =
      session.state === 'terminated'
        ? 'it was terminated; create a new session'
        : `it failed (${session.failure?.message ?? 'unknown cause'}). Its disk is kept: the files API and \`exec --ephemeral\` still reach it, each call in a fresh sandbox. Terminate it when you are done`;
    throw new AirlockError('INVALID_STATE', `session ${session.id} cannot run tool calls: ${why}`, {
      details: { sessionId: session.id, state: session.state },
    });
  }
}

/** Refuses work on a session another server manages: its machine, disk and snapshots are on that server's host. */
export function requireOwned(session: Pick<SessionRecord, 'id' | 'owner'>, owner: string): void {
  if (session.owner === owner) return;
  throw new AirlockError('SESSION_NOT_OWNED', `session ${session.id} is managed by another Airlock server (${session.owner}); send its calls to that server`, {
    details: { sessionId: session.id, owner: session.owner },
  });
}

/** The handle of the session's running machine, or INVALID_STATE. */
export function machineHandle(session: SessionRecord): SandboxHandle {
  if (!session.sandbox) {
    throw new AirlockError('INVALID_STATE', `session ${session.id} has no running machine`, { details: { sessionId: session.id } });
  }
  return session.sandbox;
}
