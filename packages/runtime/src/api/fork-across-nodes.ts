/**
 * A fork whose branches do not all fit on the node holding the parent:
 * this node makes its share (taking the snapshot when the fork needs one),
 * then asks each other node of the plan (cluster/fork-placement.ts) to fork
 * the same snapshot into its share, with the caller's credentials, and
 * answers with every branch in index order, as a fork on one node does.
 */
import type { FastifyRequest } from 'fastify';
import type { AirlockServices } from './airlock-services.js';
import { planBranches, type BranchShare } from '../cluster/fork-placement.js';
import { snapshotView } from '../core/snapshot.js';
import { AirlockError } from '../core/errors.js';
import { errorBody } from './http-errors.js';
import { sessionView } from './session-view.js';
import { FORWARDED_BY_HEADER } from './node-proxy.js';

/** What the fork route answers. */
interface ForkAnswer {
  snapshot: Record<string, unknown>;
  branches: Record<string, unknown>[];
}

/** The fork spread over nodes, or undefined when every branch fits here (the caller forks as usual). */
export async function forkAcrossNodes(
  services: AirlockServices,
  request: FastifyRequest,
  sessionId: string,
  body: { count: number; snapshotId?: string },
): Promise<ForkAnswer | undefined> {
  const cluster = services.cluster;
  if (!cluster) return undefined;
  const shares = await planBranches(cluster.routing, body.count);
  if (shares.length === 1) return undefined;
  const [here, ...elsewhere] = shares as [BranchShare, ...BranchShare[]];
  // A fork of the session itself needs its snapshot taken here first: this node makes at least one branch.
  if (here.count === 0 && body.snapshotId === undefined) {
    const largest = elsewhere.reduce((top, share) => (share.count > top.count ? share : top));
    largest.count -= 1;
    here.count = 1;
    let firstIndex = 0;
    for (const share of [here, ...elsewhere]) {
      share.firstIndex = firstIndex;
      firstIndex += share.count;
    }
  }
  const branches: Record<string, unknown>[] = [];
  let snapshot: Record<string, unknown>;
  let snapshotId: string;
  if (here.count > 0) {
    const result = await services.forks.fork({ sessionId, ...(body.snapshotId === undefined ? {} : { snapshotId: body.snapshotId }) }, here.count, {
      firstIndex: 0,
    });
    snapshot = snapshotView(result.snapshot);
    snapshotId = result.snapshot.id;
    for (const branch of result.branches)
      branches.push(branch.ok ? sessionView(branch.session) : { index: branch.index, sessionId: branch.sessionId, ...errorBody(branch.error) });
  } else {
    const record = await services.snapshots.get(body.snapshotId ?? '');
    snapshot = snapshotView(record);
    snapshotId = record.id;
  }
  const remote = await Promise.all(
    elsewhere.filter((share) => share.count > 0).map((share) => forkOn(share, request, sessionId, snapshotId, cluster.routing.nodeId)),
  );
  for (const part of remote) branches.push(...part);
  branches.sort((a, b) => branchIndex(a) - branchIndex(b));
  return { snapshot, branches };
}

/** One node's share, asked of that node; a node that cannot be asked fails its branches with the cause. */
async function forkOn(share: BranchShare, request: FastifyRequest, sessionId: string, snapshotId: string, via: string): Promise<Record<string, unknown>[]> {
  const node = share.node === 'here' ? undefined : share.node;
  if (!node) return [];
  let failure: AirlockError;
  try {
    const response = await fetch(`${node.address}/v1/sessions/${encodeURIComponent(sessionId)}/fork`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(request.headers.authorization ? { authorization: request.headers.authorization } : {}),
        [FORWARDED_BY_HEADER]: via,
      },
      body: JSON.stringify({ count: share.count, snapshotId, firstBranchIndex: share.firstIndex }),
    });
    const answer = (await response.json()) as Partial<ForkAnswer> & { error?: { code: string; message: string } };
    if (response.ok && Array.isArray(answer.branches)) return answer.branches;
    failure = new AirlockError(
      'NODE_UNREACHABLE',
      `node ${node.id} did not fork its ${share.count} branches: ${answer.error?.code ?? response.status}: ${answer.error?.message ?? 'no answer'}`,
      {
        details: { node: node.id },
      },
    );
  } catch (error) {
    failure = new AirlockError(
      'NODE_UNREACHABLE',
      `node ${node.id} (${node.address}) could not be asked to fork its ${share.count} branches: ${(error as Error).message}`,
      {
        details: { node: node.id },
      },
    );
  }
  return Array.from({ length: share.count }, (_, offset) => ({ index: share.firstIndex + offset, sessionId: null, ...errorBody(failure) }));
}

/** The lineage index of a branch as the fork route shows it (a session view, or a failure with its index). */
function branchIndex(branch: Record<string, unknown>): number {
  const lineage = branch['lineage'] as { branchIndex?: number } | null | undefined;
  return typeof branch['index'] === 'number' ? branch['index'] : (lineage?.branchIndex ?? 0);
}
