/** Read-only image routes; building and importing run on the host (`airlock images build|import`). */
import type { FastifyInstance } from 'fastify';
import type { AirlockServices } from '../airlock-services.js';
import { identityOf } from '../authentication.js';
import { imageNotFound } from '../tenant-scope.js';
import { EVERY_TENANT } from '../../core/tenancy.js';
import { needs } from '../access-rules.js';

/** Registers /v1/images routes; a tenant's token sees the images given to its tenant only. */
export function registerImageRoutes(app: FastifyInstance, services: AirlockServices): void {
  app.get('/v1/images', { config: { access: needs('image.read') } }, async (request) => {
    const { tenant } = identityOf(request);
    const images = await services.images.list();
    if (tenant === EVERY_TENANT) return { images };
    const given = [];
    for (const image of images) if (await services.tenants.imageGiven(tenant, image.name)) given.push(image);
    return { images: given };
  });
  app.get<{ Params: { name: string } }>('/v1/images/:name', { config: { access: needs('image.read') } }, async (request) => {
    const { tenant } = identityOf(request);
    // An image not given to the tenant answers as one that does not exist.
    if (tenant !== EVERY_TENANT && !(await services.tenants.imageGiven(tenant, request.params.name))) throw imageNotFound(request.params.name);
    return services.images.get(request.params.name);
  });
}
