/** Read-only image routes; building and importing run on the host (`airlock images build|import`). */
import type { FastifyInstance } from 'fastify';
import type { AirlockServices } from '../airlock-services.js';

/** Registers /v1/images routes. */
export function registerImageRoutes(app: FastifyInstance, services: AirlockServices): void {
  app.get('/v1/images', async () => ({ images: await services.images.list() }));
  app.get<{ Params: { name: string } }>('/v1/images/:name', async (request) => services.images.get(request.params.name));
}
