/**
 * A fork's branches spread over the nodes of a cluster: each branch goes to
 * the active node with the most free capacity at that moment (the node
 * holding the parent on a tie), so that a fork of many lands where there is
 * room. The node holding the parent makes its own share (taking the
 * snapshot if the fork needs one) and asks each other node to fork the
 * same snapshot from object storage into its share, numbering the branches
 * across all of them.
 */
import type { NodeRecord } from '../core/cluster-node.js';
import type { SessionRouting } from './session-routing.js';

/** How many branches one node makes, and the lineage index of its first. */
export interface BranchShare {
  node: NodeRecord | 'here';
  count: number;
  firstIndex: number;
}

/** The shares of a fork of `count` branches: this node's first (possibly 0), then the others'. */
export async function planBranches(routing: SessionRouting, count: number): Promise<BranchShare[]> {
  const free = (await routing.freeCapacity()).map((entry) => ({ ...entry, take: 0 }));
  const here = free.find((entry) => entry.node.id === routing.nodeId);
  let unplaced = count;
  while (unplaced > 0) {
    // freeCapacity sorts this node first among equals: ties stay here.
    const best = free.reduce<(typeof free)[number] | undefined>(
      (top, entry) => (!top || entry.free - entry.take > top.free - top.take ? entry : top),
      undefined,
    );
    if (!best || best.free - best.take <= 0) break;
    best.take += 1;
    unplaced -= 1;
  }
  // Past every node's capacity, the rest stays here (the fork service says if the host cannot take them).
  const shares: { node: NodeRecord | 'here'; count: number }[] = [{ node: 'here', count: (here?.take ?? 0) + unplaced }];
  for (const entry of free) if (entry !== here && entry.take > 0) shares.push({ node: entry.node, count: entry.take });
  let firstIndex = 0;
  return shares.map((share) => {
    const placed = { ...share, firstIndex };
    firstIndex += share.count;
    return placed;
  });
}
