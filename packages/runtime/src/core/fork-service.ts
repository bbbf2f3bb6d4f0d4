/**
 * Fork: one snapshot restored into N independent sessions. Each branch gets
 * its own copy of the snapshot's disk, its own sandbox restored from the
 * shared memory image, and then a fresh identity (hostname, machine id,
 * entropy) and the image's on-fork hooks, because a restored machine would
 * otherwise be a clone of its parent down to its random state.
 *
 * Branches are independent: one that fails is recorded as a failed session
 * with its cause and cleaned up, the others go on. Out of disk space is the
 * exception: branches not yet started are then not created at all.
 */
import { randomBytes } from 'node:crypto';
import type { SandboxHandle } from './sandbox-driver.js';
import { requireCapability, type SandboxDrivers } from './sandbox-drivers.js';
import type { SessionDisks } from './session-disks.js';
import type { SnapshotArtifacts } from './snapshot-artifacts.js';
import type { SnapshotRecord } from './snapshot.js';
import type { Store } from './store.js';
import type { SessionRecords } from './session-records.js';
import type { SessionLocks } from './session-locks.js';
import type { SandboxSpecs } from './sandbox-specs.js';
import { snapshotNotFound, type SnapshotService } from './snapshot-service.js';
import type { AuditLog } from '../audit/audit-log.js';
import { freshSeed, type LifecycleHooks } from './lifecycle-hooks.js';
import type { ImageCatalog, ImageRecord } from './image-catalog.js';
import { AirlockError, toAirlockError } from './errors.js';
import { newId } from './ids.js';
import { systemClock, type Clock } from './clock.js';
import { newSessionRecord, requireOwned, type SessionRecord } from './session.js';
import { hasDiskCopy } from './snapshot.js';

/** Default largest number of branches one fork may create. */
export const DEFAULT_MAX_FORK_BRANCHES = 64;

/** What to fork: a session as it is now, or a snapshot (of that session, when both are given). */
export type ForkSource = { sessionId: string; snapshotId?: string } | { snapshotId: string };

/** The outcome of one branch. */
export type ForkBranch =
  | { index: number; ok: true; session: SessionRecord }
  | { index: number; ok: false; sessionId: string | null; error: AirlockError };

/** The outcome of a fork: the snapshot every branch starts from, and each branch in index order. */
export interface ForkResult {
  snapshot: SnapshotRecord;
  branches: ForkBranch[];
}

/** Collaborators and limits of the fork service. */
export interface ForkServiceDeps {
  store: Store;
  audit: AuditLog;
  records: SessionRecords;
  locks: SessionLocks;
  specs: SandboxSpecs;
  drivers: SandboxDrivers;
  disks: SessionDisks;
  images: ImageCatalog;
  artifacts: SnapshotArtifacts;
  snapshots: SnapshotService;
  hooks: LifecycleHooks;
  clock?: Clock;
  /** largest count accepted; default 64 */
  maxBranches?: number;
  /** branches restored at the same time; default 4 */
  concurrency?: number;
  /** snapshots live in object storage (`--objects`): any server can fork a snapshot of a session another one manages */
  sharedArtifacts?: boolean;
}

/** Options of one fork. */
export interface ForkOptions {
  /** the lineage index of the first branch (a fork whose branches are spread over nodes numbers them across all); default 0 */
  firstIndex?: number;
}

/** Forks sessions and snapshots into independent branches. */
export class ForkService {
  readonly maxBranches: number;
  private readonly deps: ForkServiceDeps;
  private readonly clock: Clock;
  private readonly concurrency: number;

  constructor(deps: ForkServiceDeps) {
    this.deps = deps;
    this.clock = deps.clock ?? systemClock;
    this.maxBranches = deps.maxBranches ?? DEFAULT_MAX_FORK_BRANCHES;
    this.concurrency = Math.max(1, deps.concurrency ?? 4);
  }

  /** Creates `count` branches of `source`; the result lists each branch, created or failed with its cause. */
  async fork(source: ForkSource, count: number, options: ForkOptions = {}): Promise<ForkResult> {
    if (!Number.isInteger(count) || count < 1 || count > this.maxBranches) {
      throw new AirlockError('INVALID_ARGUMENTS', `fork count must be a whole number from 1 to ${this.maxBranches} (got ${String(count)}); the maximum is the server's maxForkBranches`, {
        details: { count, max: this.maxBranches },
      });
    }
    const firstIndex = options.firstIndex ?? 0;
    if (!Number.isInteger(firstIndex) || firstIndex < 0 || firstIndex + count > this.maxBranches) {
      throw new AirlockError('INVALID_ARGUMENTS', `the branches of one fork are numbered 0 to ${this.maxBranches - 1}: first branch index ${String(firstIndex)} with ${String(count)} branches does not fit`, {
        details: { firstIndex, count, max: this.maxBranches },
      });
    }
    const { records, locks, snapshots, artifacts, store, audit, drivers } = this.deps;
    // Before any snapshot is taken for it: the parent's driver must be able to fork at all.
    const parentId = 'sessionId' in source ? source.sessionId : (await snapshots.get(source.snapshotId)).sessionId;
    requireCapability(drivers.forSession(await records.get(parentId)), 'fork', 'restore one snapshot into several machines', parentId);
    const { snapshot, takenNow } = await this.sourceSnapshot(source);
    // Shared locks on the parent and the snapshot: a terminate of the parent, `snapshots rm` and the
    // retention sweeper wait until every branch is restored, while the parent's own calls go on.
    const locked = <T>(work: () => Promise<T>): Promise<T> => locks.shared(snapshot.sessionId, () => locks.shared(snapshot.id, work));
    return locked(async () => {
      await snapshots.restorable(snapshot.id);
      // A snapshot sealed moments ago by this call is not read a second time.
      if (!takenNow) await artifacts.verify(snapshot.id, snapshot.checksum);
      const parent = await records.get(snapshot.sessionId);
      // The snapshot's bytes and the branches' disks live on the host of the server that manages the parent,
      // unless they are in object storage: then a named snapshot forks on any server.
      if (!(this.deps.sharedArtifacts && source.snapshotId !== undefined)) requireOwned(parent, records.owner);
      const image = await this.deps.images.get(snapshot.imageName);
      if (image.digest !== snapshot.imageDigest) {
        throw new AirlockError('INVALID_STATE', `image ${image.name} changed since snapshot ${snapshot.id} was taken (${snapshot.imageDigest} then, ${image.digest} now); its memory cannot run on another root filesystem`, {
          details: { snapshotId: snapshot.id, expected: snapshot.imageDigest, actual: image.digest },
        });
      }
      await audit.appendNow(store, { sessionId: parent.id, type: 'session.fork-started', data: { snapshotId: snapshot.id, count } });
      const branches = await this.createBranches(parent, snapshot, image, count, firstIndex);
      await audit.appendNow(store, {
        sessionId: parent.id,
        type: 'session.fork-completed',
        data: {
          snapshotId: snapshot.id,
          count,
          created: branches.flatMap((branch) => (branch.ok ? [branch.session.id] : [])),
          failed: branches.flatMap((branch) => (branch.ok ? [] : [{ index: branch.index, sessionId: branch.sessionId, code: branch.error.code, message: branch.error.message }])),
        },
      });
      return { snapshot, branches };
    });
  }

  /** The snapshot to restore: given, or taken now from the session (running, paused or suspended). */
  private async sourceSnapshot(source: ForkSource): Promise<{ snapshot: SnapshotRecord; takenNow: boolean }> {
    const { records, snapshots } = this.deps;
    if (source.snapshotId !== undefined) {
      // Another session's snapshot (of this tenant or another) answers exactly as one that does not exist: nothing about it is told.
      if ('sessionId' in source && source.sessionId !== (await snapshots.get(source.snapshotId)).sessionId) throw snapshotNotFound(source.snapshotId);
      const snapshot = await snapshots.restorable(source.snapshotId);
      if (hasDiskCopy(snapshot)) return { snapshot, takenNow: false };
      const owner = await records.get(snapshot.sessionId);
      if (owner.state === 'suspended' && owner.resumeSnapshotId === snapshot.id) return { snapshot: await snapshots.fromSuspended(owner.id, { reason: 'fork' }), takenNow: true };
      throw new AirlockError('INVALID_STATE', `snapshot ${snapshot.id} holds memory only (taken at suspend) and session ${owner.id} has run since, so its disk no longer matches; fork the session itself or a snapshot from \`airlock snapshots create\``, {
        details: { snapshotId: snapshot.id, sessionId: owner.id },
      });
    }
    if (!('sessionId' in source)) throw new AirlockError('INVALID_ARGUMENTS', 'fork needs a sessionId or a snapshotId');
    const session = await records.get(source.sessionId);
    requireOwned(session, records.owner);
    if (session.mode === 'per-call' || session.state === 'running' || session.state === 'paused' || session.state === 'suspended') {
      return { snapshot: await snapshots.capture(session.id, { reason: 'fork' }), takenNow: true };
    }
    const why = session.state === 'terminated' ? 'it was terminated; its memory and disk are gone' : session.state === 'failed' ? 'it failed and its memory is lost' : 'it is still being created; retry in a moment';
    throw new AirlockError('INVALID_STATE', `cannot fork session ${session.id}: ${why}`, { details: { sessionId: session.id, state: session.state } });
  }

  /** Runs the branches through a small pool; after DISK_FULL, branches not yet started are not created. */
  private async createBranches(parent: SessionRecord, snapshot: SnapshotRecord, image: ImageRecord, count: number, firstIndex: number): Promise<ForkBranch[]> {
    const results: ForkBranch[] = [];
    let next = 0;
    let halted: { index: number; error: AirlockError } | undefined;
    const worker = async (): Promise<void> => {
      while (next < count) {
        const position = next++;
        const index = firstIndex + position;
        if (halted) {
          const message = `branch ${index} was not created: the host ran out of disk space while creating branch ${halted.index} (${halted.error.message}); free space under the data dir, then fork again`;
          results[position] = { index, ok: false, sessionId: null, error: new AirlockError('DISK_FULL', message, { details: { branchIndex: index } }) };
          continue;
        }
        const branch = await this.createBranch(parent, snapshot, image, index);
        results[position] = branch;
        if (!branch.ok && branch.error.code === 'DISK_FULL') halted ??= { index, error: branch.error };
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, count) }, worker));
    return results;
  }

  /** One branch: record, disk, restore, identity, hooks; on failure everything of it is removed but its record. */
  private async createBranch(parent: SessionRecord, snapshot: SnapshotRecord, image: ImageRecord, index: number): Promise<ForkBranch> {
    const { records, locks, specs, disks, drivers, artifacts, hooks } = this.deps;
    const driver = drivers.forSession(parent);
    const now = this.clock.now().toISOString();
    const lineage = { parentSessionId: parent.id, snapshotId: snapshot.id, branchIndex: index };
    const branch = newSessionRecord(
      newId('ses'),
      {
        owner: records.owner,
        mode: 'machine',
        tenant: parent.tenant,
        principal: parent.principal,
        imageName: snapshot.imageName,
        imageDigest: snapshot.imageDigest,
        contractVersion: snapshot.contractVersion,
        contract: parent.contract,
        resources: parent.resources,
        generation: 1,
        lineage,
        driver: driver.name,
      },
      now,
    );
    // The first record of the branch's own chain: where it came from.
    await records.insert(branch, {
      type: 'session.forked',
      data: { ...lineage, image: image.name, imageDigest: image.digest, contractVersion: branch.contractVersion, contract: branch.contract, tenant: branch.tenant, principal: branch.principal, resources: branch.resources, sandbox: driver.name },
    });
    return locks.exclusive(branch.id, async (): Promise<ForkBranch> => {
      const started = Date.now();
      let handle: SandboxHandle | undefined;
      try {
        await disks.createFrom(branch.id, artifacts.diskPathFor(snapshot.id));
        const diskMs = Date.now() - started;
        const spec = await specs.specFor(branch, image);
        // A failed restore cleans up after itself (driver contract); from here on the handle owns the sandbox.
        const identity = { hostname: spec.hostname, machineId: randomBytes(16).toString('hex'), entropy: randomBytes(64) };
        // The identity rides along: a driver that can hold the branch's processes applies it before they run.
        handle = await driver.restore({ ...spec, identity }, artifacts.pathFor(snapshot.id));
        const restoreMs = Date.now() - started - diskMs;
        await driver.personalize(handle, identity);
        const restoredHandle = handle;
        await records.transition(
          branch.id,
          'start',
          {
            type: 'session.started',
            data: { sandboxId: handle.sandboxId, driver: driver.name, restoredFrom: snapshot.id, hostname: identity.hostname, machineId: identity.machineId, durationMs: Date.now() - started, diskMs, restoreMs },
          },
          { sandbox: restoredHandle },
        );
        await hooks.run(handle, branch.id, 'on-fork', {
          AIRLOCK_BRANCH_INDEX: String(index),
          AIRLOCK_FORK_SEED: freshSeed(),
          AIRLOCK_SESSION_ID: branch.id,
          AIRLOCK_PARENT_SESSION_ID: parent.id,
          AIRLOCK_SNAPSHOT_ID: snapshot.id,
        });
        return { index, ok: true, session: await records.get(branch.id) };
      } catch (error) {
        const failure = toAirlockError(error, 'DRIVER_FAILED');
        if (handle) await driver.destroy(handle).catch(() => undefined);
        await disks.destroy(branch.id).catch(() => undefined);
        await records.transition(
          branch.id,
          'fail',
          { type: 'session.failed', data: { operation: 'fork', branchIndex: index, code: failure.code, message: failure.message } },
          { sandbox: null, failure: { code: failure.code, message: failure.message } },
        );
        return { index, ok: false, sessionId: branch.id, error: failure };
      }
    });
  }
}
