/**
 * Where a call for a session runs, when several nodes share the store: on
 * the node that holds the session's lease while that node is alive (the
 * API proxies the call there), or here after taking the lease over when
 * its node is gone or draining and the session is suspended (resume
 * anywhere: its snapshot and disk come from object storage). Of nodes
 * racing for one session, the store's row lock lets exactly one take it;
 * the others then find a live owner and proxy. New sessions go to the
 * active node with the most free capacity.
 */
import type { NodeRecord } from '../core/cluster-node.js';
import type { Store } from '../core/store.js';
import type { SessionRecord } from '../core/session.js';
import type { SessionRecords } from '../core/session-records.js';
import type { NodeMembership } from './node-membership.js';

/** Where a request goes: answered here, or forwarded to another node. */
export type Route = { kind: 'local' } | { kind: 'proxy'; node: NodeRecord };

const LOCAL: Route = { kind: 'local' };

/** States from which a session moves to another node with its lease (nothing runs). */
const MOVABLE = new Set<SessionRecord['state']>(['suspended', 'failed']);

/** States in which sessions count against a node's capacity. */
const HOLDING = new Set<SessionRecord['state']>(['creating', 'running', 'paused', 'degraded']);

/** Decides where session calls run. */
export class SessionRouting {
  constructor(
    private readonly deps: {
      store: Store;
      records: SessionRecords;
      membership: NodeMembership;
    },
  ) {}

  /** This node's id. */
  get nodeId(): string {
    return this.deps.membership.id;
  }

  /**
   * The route of a call for `sessionId`. `proxied` says the call was already
   * forwarded once by another node: it is answered here whatever happens, so
   * that a disagreement between nodes can never bounce a call around.
   */
  async routeSession(sessionId: string, proxied: boolean, attempt = 1): Promise<Route> {
    const { store, records, membership } = this.deps;
    const session = await store.getSession(sessionId);
    if (!session || session.state === 'terminated') return LOCAL;
    if (session.owner === this.nodeId) {
      if (proxied || !this.isMovable(session)) return LOCAL;
      const self = await store.getNode(this.nodeId);
      if (self?.state !== 'draining') return LOCAL;
      // Draining: a suspended session resumes on another node, which takes its lease.
      const target = await this.bestNode([this.nodeId]);
      return target ? { kind: 'proxy', node: target } : LOCAL;
    }
    const owner = await store.getNode(session.owner);
    const liveness = owner ? membership.liveness(owner) : 'lost';
    if (owner && (liveness === 'active' || liveness === 'draining') && !(liveness === 'draining' && this.isMovable(session))) {
      return proxied ? LOCAL : { kind: 'proxy', node: owner };
    }
    if (liveness === 'active' || !this.isMovable(session)) return LOCAL;
    // A node being drained takes nothing over: the session goes to a node that stays.
    if (!proxied && (await store.getNode(this.nodeId))?.state === 'draining') {
      const target = await this.bestNode([this.nodeId, session.owner]);
      if (target) return { kind: 'proxy', node: target };
    }
    const taken = await records.takeOver(
      sessionId,
      async (fresh, tx) => {
        if (fresh.owner !== session.owner || !this.isMovable(fresh)) return false;
        const now = await tx.getNode(fresh.owner);
        const state = now ? membership.liveness(now) : 'lost';
        return state !== 'active';
      },
      { type: 'session.lease-taken', data: { reason: liveness === 'draining' ? 'owner draining' : `owner ${liveness}` } },
    );
    // Another node won the race: it is the owner now, and the call goes there.
    if (!taken && attempt === 1) return this.routeSession(sessionId, proxied, 2);
    return LOCAL;
  }

  /** Where a new session is made: the active node with the most free capacity (this one on a tie). */
  async placeNew(proxied: boolean): Promise<Route> {
    if (proxied) return LOCAL;
    const best = await this.bestNode([]);
    return !best || best.id === this.nodeId ? LOCAL : { kind: 'proxy', node: best };
  }

  /** Active nodes with their free capacity (sessions they can still take), most free first. */
  async freeCapacity(): Promise<{ node: NodeRecord; free: number }[]> {
    const { store, membership } = this.deps;
    const nodes = (await store.listNodes()).filter((node) => membership.liveness(node) === 'active');
    const held = new Map<string, number>();
    for (const session of await store.listSessions({ states: [...HOLDING] })) held.set(session.owner, (held.get(session.owner) ?? 0) + 1);
    return nodes
      .map((node) => ({ node, free: node.capacity.sessions - (held.get(node.id) ?? 0) }))
      .sort((a, b) => b.free - a.free || Number(b.node.id === this.nodeId) - Number(a.node.id === this.nodeId) || a.node.id.localeCompare(b.node.id));
  }

  private async bestNode(excluding: string[]): Promise<NodeRecord | undefined> {
    const self = await this.deps.store.getNode(this.nodeId);
    return (await this.freeCapacity()).find(
      ({ node, free }) => free > 0 && !excluding.includes(node.id) && (!self || node.runtimeVersion === self.runtimeVersion),
    )?.node;
  }

  private isMovable(session: SessionRecord): boolean {
    return MOVABLE.has(session.state) && session.pendingOperation === null;
  }
}
