/**
 * This node's membership of the cluster: it registers itself, renews its
 * heartbeat every third of the lease, and on every renewal (1) drops the
 * sessions whose lease another node took (a node paused past its lease
 * finds out here, and its writes are refused by the store meanwhile), (2)
 * fails with NODE_LOST the machines of nodes that stopped renewing (their
 * suspended sessions are taken over on their next call instead), and (3)
 * suspends its own sessions while it is being drained. It leaves (state
 * `left`) when the server stops.
 */
import { livenessOf, type NodeCapacity, type NodeLiveness, type NodeRecord } from '../core/cluster-node.js';
import type { Store } from '../core/store.js';
import type { Clock } from '../core/clock.js';
import type { SessionRecords } from '../core/session-records.js';
import type { SessionRecord } from '../core/session.js';
import { isAirlockError } from '../core/errors.js';

/** Default lease of a node: a node silent for longer is gone. */
export const DEFAULT_NODE_LEASE_MS = 15_000;

/** What the membership acts through. */
export interface NodeMembershipDeps {
  store: Store;
  records: SessionRecords;
  clock: Clock;
  /** this node as it registers: id, address, capacity, versions */
  self: Omit<NodeRecord, 'state' | 'joinedAt' | 'heartbeatAt'>;
  leaseMs: number;
  /** suspends one of this node's sessions (a drain) */
  suspend(sessionId: string): Promise<unknown>;
  /** removes what this host still has of a session whose lease was lost (its machine, its disk) */
  dropLocal(sessionId: string): Promise<void>;
  /** something happened worth a line in the server's log */
  log(message: string): void;
}

/** States in which a machine exists and dies with its node. */
const MACHINE_STATES = new Set<SessionRecord['state']>(['creating', 'running', 'paused', 'degraded']);

/** Registers this node and keeps its lease. */
export class NodeMembership {
  private timer: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private beating: Promise<void> | undefined;
  private heartbeatFailing = false;
  private checkFailing = false;
  /** when this node last failed to reach the store (ms); 0: never */
  private storeFailedAt = 0;
  private draining: Promise<void> | undefined;
  private stopped = false;
  private readonly unsubscribe: () => void;

  constructor(private readonly deps: NodeMembershipDeps) {
    this.unsubscribe = deps.records.leases.onLost((sessionId) => void this.drop(sessionId));
  }

  /** This node's id. */
  get id(): string {
    return this.deps.self.id;
  }

  /** How long a node may stay silent before it is gone. */
  get leaseMs(): number {
    return this.deps.leaseMs;
  }

  /** What `node` is now. */
  liveness(node: Pick<NodeRecord, 'state' | 'heartbeatAt'>): NodeLiveness {
    return livenessOf(node, this.deps.clock.now(), this.deps.leaseMs);
  }

  /** Registers (or re-registers) this node as active, then renews its heartbeat until `leave`. */
  async join(): Promise<void> {
    const now = this.deps.clock.now().toISOString();
    await this.deps.store.transaction((tx) => tx.putNode({ ...this.deps.self, state: 'active', joinedAt: now, heartbeatAt: now }));
    const every = Math.max(100, Math.floor(this.deps.leaseMs / 3));
    // The heartbeat has a timer of its own: a long tick (a drain suspending machines) must never let the lease lapse.
    this.heartbeat = setInterval(() => {
      this.beating ??= this.beat().finally(() => (this.beating = undefined));
    }, every);
    this.heartbeat.unref();
    this.timer = setInterval(() => {
      this.ticking ??= this.tick()
        .then(
          () => {
            this.checkFailing = false;
          },
          (error: unknown) => {
            this.storeFailedAt = this.deps.clock.now().getTime();
            if (!this.checkFailing)
              this.deps.log(`cluster check failed (told again only after one succeeds): ${error instanceof Error ? error.message : String(error)}`);
            this.checkFailing = true;
          },
        )
        .finally(() => (this.ticking = undefined));
    }, every);
    this.timer.unref();
  }

  /** Renews this node's heartbeat. */
  private async beat(): Promise<void> {
    const { store, clock, self } = this.deps;
    // Told once when heartbeats start failing (the store is down) and once when one gets through again.
    await store
      .transaction((tx) => tx.touchNode(self.id, clock.now().toISOString()))
      .then(
        () => {
          if (this.heartbeatFailing) this.deps.log('heartbeat renewed again');
          this.heartbeatFailing = false;
        },
        (error: unknown) => {
          this.storeFailedAt = this.deps.clock.now().getTime();
          if (!this.heartbeatFailing)
            this.deps.log(
              `heartbeat failed (retried every ${Math.max(100, Math.floor(this.deps.leaseMs / 3))} ms, told again once it works): ${error instanceof Error ? error.message : String(error)}`,
            );
          this.heartbeatFailing = true;
        },
      );
  }

  /** One look around: lost leases, lost nodes, a drain of this node. */
  async tick(): Promise<void> {
    if (this.stopped) return;
    const { store, self } = this.deps;
    await this.checkLeases();
    const nodes = await store.listNodes();
    // After an outage of the store every node's heartbeat is as old as the outage: none is taken for lost
    // until the others have had a whole lease to renew theirs (a failover must not fail every machine).
    const others = this.deps.clock.now().getTime() - this.storeFailedAt > this.deps.leaseMs;
    for (const node of nodes) {
      if (others && node.id !== self.id && this.liveness(node) === 'lost') await this.failMachinesOf(node);
    }
    const mine = nodes.find((node) => node.id === self.id);
    if (mine?.state === 'draining') this.draining ??= this.drain().finally(() => (this.draining = undefined));
  }

  /** Drops every session whose lease another node has taken since this node took it. */
  private async checkLeases(): Promise<void> {
    const { records, store } = this.deps;
    for (const [sessionId, epoch] of records.leases.entries()) {
      const stored = await store.getSession(sessionId);
      if (!stored) {
        records.leases.release(sessionId);
        continue;
      }
      if (stored.owner !== this.id || (stored.epoch ?? 0) > epoch) records.leases.lose(sessionId);
    }
  }

  private async drop(sessionId: string): Promise<void> {
    const stored = await this.deps.store.getSession(sessionId).catch(() => undefined);
    this.deps.log(`lease of session ${sessionId} lost to node ${stored?.owner ?? '?'} (epoch ${stored?.epoch ?? '?'}); dropping what this host has of it`);
    await this.deps
      .dropLocal(sessionId)
      .catch((error: unknown) => this.deps.log(`dropping session ${sessionId} failed: ${error instanceof Error ? error.message : String(error)}`));
  }

  /** The machines of a node that stopped renewing died with it: their sessions fail with NODE_LOST. */
  private async failMachinesOf(node: NodeRecord): Promise<void> {
    const { records, store } = this.deps;
    const sessions = (await store.listSessions({ owner: node.id })).filter((session) => MACHINE_STATES.has(session.state));
    for (const session of sessions) {
      // The newest snapshot still there (its files are in the bucket): what a fork continues from.
      const lastSnapshot = (await store.listSnapshots({ sessionId: session.id }))
        .filter((snapshot) => snapshot.deletedAt === null)
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
        .at(-1);
      const message =
        `node ${node.id} stopped renewing its lease at ${node.heartbeatAt} and its machine is lost` +
        (lastSnapshot
          ? `; its last snapshot ${lastSnapshot.id} (${lastSnapshot.createdAt}) can be forked with \`airlock sessions fork ${session.id} --snapshot ${lastSnapshot.id}\``
          : '; it has no snapshot to continue from');
      try {
        const failed = await records.takeOver(
          session.id,
          async (fresh, tx) => {
            const owner = await tx.getNode(fresh.owner);
            return fresh.owner === node.id && MACHINE_STATES.has(fresh.state) && owner !== undefined && this.liveness(owner) === 'lost';
          },
          {
            type: 'session.node-lost',
            data: { node: node.id, heartbeatAt: node.heartbeatAt, lastSnapshotId: lastSnapshot?.id ?? null, lastSnapshotAt: lastSnapshot?.createdAt ?? null },
          },
          {
            operation: 'fail',
            fields: {
              sandbox: null,
              failure: { code: 'NODE_LOST', message, ...(lastSnapshot ? { lastSnapshotId: lastSnapshot.id, lastSnapshotAt: lastSnapshot.createdAt } : {}) },
            },
          },
        );
        if (failed) this.deps.log(`session ${session.id}: ${message}`);
      } catch (error) {
        if (!isAirlockError(error, 'WRITE_CONFLICT')) throw error;
      }
    }
  }

  /** Suspends this node's machines; once suspended, their next call takes them to another node. */
  private async drain(): Promise<void> {
    const { store } = this.deps;
    const mine = (await store.listSessions({ owner: this.id })).filter(
      (session) => session.mode === 'machine' && (session.state === 'running' || session.state === 'paused'),
    );
    for (const session of mine) {
      const fresh = await store.getNode(this.id);
      if (fresh?.state !== 'draining') return;
      try {
        await this.deps.suspend(session.id);
        this.deps.log(`drain: suspended session ${session.id}`);
      } catch (error) {
        this.deps.log(`drain: suspending session ${session.id} failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }

  /** Stops renewing and says so: other nodes take this node's suspended sessions on their next call. */
  async leave(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    await this.ticking?.catch(() => undefined);
    await this.beating;
    await this.draining;
    this.unsubscribe();
    await this.deps.store.transaction((tx) => tx.setNodeState(this.id, 'left')).catch(() => undefined);
  }
}

/** The capacity of this host from its size: a machine per 512 MiB of memory unless told otherwise. */
export function hostCapacity(cpus: number, memoryMb: number, sessions?: number): NodeCapacity {
  return { cpus, memoryMb, sessions: sessions ?? Math.max(1, Math.floor(memoryMb / 512)) };
}
