/**
 * A node: one `airlock serve` process (one data dir, one host's sandboxes)
 * among those sharing a store. Nodes register themselves and renew a
 * heartbeat; a node whose heartbeat is older than the lease is gone, and
 * its sessions may be taken over (see docs/scale-out.md).
 */

/** What a node said about itself: `active` takes sessions, `draining` gives its sessions up, `left` stopped cleanly. */
export type NodeState = 'active' | 'draining' | 'left';

/** What a node holds at most, for placement. */
export interface NodeCapacity {
  /** running or paused machines it takes at most */
  sessions: number;
  cpus: number;
  memoryMb: number;
}

/** A node as stored. */
export interface NodeRecord {
  id: string;
  /** where other nodes reach its API (`--advertise`), e.g. http://10.0.0.5:7070 */
  address: string;
  state: NodeState;
  capacity: NodeCapacity;
  /** the sandbox runtime's version (runsc); snapshots restore only on a compatible one */
  runtimeVersion: string;
  /** this Airlock's version */
  airlockVersion: string;
  joinedAt: string;
  /** the node's last renewal of its lease */
  heartbeatAt: string;
}

/** What a node is now, as seen at `now`: its own state, or `lost` once its heartbeat is older than the lease. */
export type NodeLiveness = NodeState | 'lost';

/** The node's state at `now`: a node that stopped renewing is `lost`, whatever it last said. */
export function livenessOf(node: Pick<NodeRecord, 'state' | 'heartbeatAt'>, now: Date, leaseMs: number): NodeLiveness {
  if (node.state === 'left') return 'left';
  return now.getTime() - Date.parse(node.heartbeatAt) > leaseMs ? 'lost' : node.state;
}
