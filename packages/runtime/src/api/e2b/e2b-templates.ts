/**
 * E2B templates: a name for an Airlock image, optionally with a contract
 * (`airlock templates set NAME --image IMAGE [--contract FILE]`). `base` is the
 * default image and contract unless set otherwise. Kept in the data dir
 * (`e2b-templates.json`), read on every create.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { needs } from '../access-rules.js';
import { parseBody } from '../parse-body.js';
import { AirlockError } from '../../core/errors.js';
import { DEFAULT_IMAGE } from '../../core/session-service.js';
import type { AirlockServices } from '../airlock-services.js';
import type { E2bTemplate, TemplateLookup } from './e2b-control-routes.js';

const FILE_NAME = 'e2b-templates.json';

/** A template name: what E2B's SDK sends as templateID. */
export const TEMPLATE_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;

function read(dataDir: string): Record<string, E2bTemplate> {
  const path = join(dataDir, FILE_NAME);
  if (!existsSync(path)) return {};
  return JSON.parse(readFileSync(path, 'utf8')) as Record<string, E2bTemplate>;
}

function write(dataDir: string, templates: Record<string, E2bTemplate>): void {
  const path = join(dataDir, FILE_NAME);
  writeFileSync(`${path}.tmp`, `${JSON.stringify(templates, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
}

/** Finds a template in the data dir; `base` is the default image and contract unless set. */
export function e2bTemplateLookup(dataDir: string): TemplateLookup {
  return async (name) => read(dataDir)[name] ?? (name === 'base' ? { image: DEFAULT_IMAGE } : undefined);
}

const setBody = z.strictObject({ image: z.string().min(1).max(128), contract: z.unknown().optional() });

/** Registers /v1/e2b/templates (list: image.read; set and remove: admin). */
export function registerTemplateRoutes(app: FastifyInstance, services: AirlockServices, dataDir: string): void {
  app.get('/v1/e2b/templates', { config: { access: needs('image.read') } }, async () => {
    const templates = read(dataDir);
    const all: Record<string, E2bTemplate> = { base: { image: DEFAULT_IMAGE }, ...templates };
    return { templates: Object.entries(all).map(([name, template]) => ({ name, image: template.image, contract: template.contract !== undefined })) };
  });
  app.put<{ Params: { name: string } }>('/v1/e2b/templates/:name', { config: { access: needs('tenant.manage') } }, async (request) => {
    const name = request.params.name;
    if (!TEMPLATE_NAME_PATTERN.test(name)) {
      throw new AirlockError(
        'INVALID_ARGUMENTS',
        `template name ${JSON.stringify(name)} is not valid: use 1-64 lower-case letters, digits or . _ - (starting with a letter or digit)`,
        { details: { field: 'name' } },
      );
    }
    const body = parseBody(setBody, request.body ?? {});
    // Refused here rather than at the first create: the contract must be valid and the image known.
    if (body.contract !== undefined) services.parseContract(body.contract);
    await services.images.get(body.image);
    const templates = read(dataDir);
    templates[name] = { image: body.image, ...(body.contract === undefined ? {} : { contract: body.contract }) };
    write(dataDir, templates);
    return { name, image: body.image, contract: body.contract !== undefined };
  });
  app.delete<{ Params: { name: string } }>('/v1/e2b/templates/:name', { config: { access: needs('tenant.manage') } }, async (request) => {
    const templates = read(dataDir);
    if (!(request.params.name in templates)) {
      throw new AirlockError('NOT_FOUND', `no template ${request.params.name}; list them with \`airlock templates ls\``, {
        details: { name: request.params.name },
      });
    }
    delete templates[request.params.name];
    write(dataDir, templates);
    return { name: request.params.name, removed: true };
  });
}
