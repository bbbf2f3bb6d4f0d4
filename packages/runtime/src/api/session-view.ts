/**
 * What the API shows of a session: its record without internals, with
 * meters that include the time spent in the current state.
 */
import type { SessionRecord } from '../core/session.js';
import { secondsBetween } from '../core/clock.js';
import { idlePolicyOf } from '../core/idle-sleeper.js';
import { LEGACY_DRIVER_NAME } from '../core/sandbox-drivers.js';

/** The public view of a session. */
export function sessionView(session: SessionRecord, now: Date = new Date()): Record<string, unknown> {
  const meters = { ...session.meters };
  const inState = session.state === 'terminated' || session.state === 'failed' ? 0 : secondsBetween(session.stateSince, now);
  if (session.state === 'running') meters.runningSeconds += inState;
  if (session.state === 'paused') meters.pausedSeconds += inState;
  if (session.state === 'suspended') meters.suspendedSeconds += inState;
  const held = meters.runningSeconds + meters.pausedSeconds;
  const { cpuSecondsClosed: _closed, memorySampledAt: _sampled, ...shownMeters } = meters;
  return {
    id: session.id,
    state: session.state,
    /** the node that holds the session's lease (runs its machine, keeps its disk) */
    node: session.owner,
    mode: session.mode,
    /** the sandbox driver of its machines; records from before drivers were named are gvisor's */
    sandbox: session.driver ?? LEGACY_DRIVER_NAME,
    pendingOperation: session.pendingOperation,
    image: { name: session.imageName, digest: session.imageDigest },
    tenant: session.tenant,
    principal: session.principal,
    contractVersion: session.contractVersion,
    tools: Array.isArray(session.contract['tools']) ? session.contract['tools'] : [],
    resources: session.resources,
    idle: session.mode === 'machine' ? idlePolicyOf(session) : null,
    exposedPorts: session.exposedPorts ?? [],
    sandboxId: session.sandbox?.sandboxId ?? null,
    snapshotId: session.resumeSnapshotId,
    lineage: session.lineage,
    failure: session.failure,
    guard: { tripped: session.guard.tripped },
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    stateSince: session.stateSince,
    lastActivityAt: session.lastActivityAt,
    meters: {
      ...shownMeters,
      timeWeightedMemoryBytes: meters.runningSeconds > 0 ? Math.round(meters.memoryByteSeconds / meters.runningSeconds) : 0,
      idleFractionUnpaid: held + meters.suspendedSeconds > 0 ? meters.suspendedSeconds / (held + meters.suspendedSeconds) : 0,
    },
  };
}
