/** Routes of the nodes sharing the store (`airlock nodes ls`, `airlock nodes drain`) and of this node's warm pools. */
import type { FastifyInstance } from 'fastify';
import type { AirlockServices } from '../airlock-services.js';
import { AirlockError } from '../../core/errors.js';
import type { NodeRecord } from '../../core/cluster-node.js';
import { livenessOf } from '../../core/cluster-node.js';
import { DEFAULT_NODE_LEASE_MS } from '../../cluster/node-membership.js';
import { needs } from '../access-rules.js';

/** Registers /v1/nodes routes. */
export function registerNodeRoutes(app: FastifyInstance, services: AirlockServices): void {
  const leaseMs = services.cluster?.membership.leaseMs ?? DEFAULT_NODE_LEASE_MS;
  const view = async (nodes: NodeRecord[]) => {
    const held = new Map<string, number>();
    for (const session of await services.store.listSessions()) {
      if (session.state !== 'terminated') held.set(session.owner, (held.get(session.owner) ?? 0) + 1);
    }
    const now = new Date();
    return nodes.map((node) => ({
      id: node.id,
      address: node.address,
      state: livenessOf(node, now, leaseMs),
      sessions: held.get(node.id) ?? 0,
      heartbeatAt: node.heartbeatAt,
    }));
  };

  app.get('/v1/nodes', { config: { access: needs('node.manage') } }, async () => view(await services.store.listNodes()));

  // This server's own pools (each node keeps its own).
  app.get('/v1/warm-pool', { config: { access: needs('node.manage') } }, async () => services.pool.status());

  app.post<{ Params: { id: string } }>('/v1/nodes/:id/drain', { config: { access: needs('node.manage') } }, async (request) => {
    const id = request.params.id;
    const node = await services.store.getNode(id);
    if (!node) {
      throw new AirlockError('NOT_FOUND', `no node ${id}; list nodes with \`airlock nodes ls\``, { details: { node: id } });
    }
    if (livenessOf(node, new Date(), leaseMs) !== 'active' && node.state !== 'draining') {
      throw new AirlockError(
        'INVALID_STATE',
        `node ${id} is ${livenessOf(node, new Date(), leaseMs)}, not active: there is nothing to drain (its suspended sessions already resume elsewhere on their next call)`,
        {
          details: { node: id },
        },
      );
    }
    await services.store.transaction((tx) => tx.setNodeState(id, 'draining'));
    const [drained] = await view([{ ...node, state: 'draining' }]);
    return drained;
  });
}
