/**
 * E2B's control plane (sandboxes: create, list, get, kill, timeout, pause,
 * connect) under `/e2b`, over ordinary Airlock sessions. Every route declares
 * its access like the rest of the API; keys are Airlock tokens
 * (`X-API-Key: e2b_…`), so tenancy, roles, revocation and audit names are
 * the token's.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AirlockServices } from '../airlock-services.js';
import { needs } from '../access-rules.js';
import { identityOf, type Identity } from '../authentication.js';
import { AirlockError } from '../../core/errors.js';
import { DEFAULT_IMAGE } from '../../core/session-service.js';
import { EVERY_TENANT } from '../../core/tenancy.js';
import type { SessionRecord } from '../../core/session.js';
import { E2B_PREFIX, ENVD_VERSION, e2bState, parseMetadataFilter, sandboxBody, type E2bSandboxInfo } from './e2b-sandboxes.js';

const createBody = z.looseObject({
  templateID: z.string().min(1).max(128),
  timeout: z.number().int().min(0).max(86_400).optional(),
  metadata: z.record(z.string(), z.string()).optional(),
  envVars: z.record(z.string(), z.string()).optional(),
  secure: z.boolean().optional(),
  autoPause: z.boolean().optional(),
  allow_internet_access: z.boolean().optional(),
});
const timeoutBody = z.looseObject({ timeout: z.number().int().min(0).max(86_400) });
const connectBody = z.looseObject({ timeout: z.number().int().min(0).max(86_400).optional() });

/** Sandboxes E2B callers see: a terminated or failed session is gone for them. */
const LIVE_STATES = ['creating', 'running', 'paused', 'suspended', 'degraded'] as const;

/** Default E2B timeout: 5 minutes. */
const DEFAULT_TIMEOUT_SECONDS = 300;

/** What the E2B API keeps of its sandboxes (in this server's memory), and their timers. */
export class E2bSandboxes {
  private readonly info = new Map<string, E2bSandboxInfo>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Ends the commands still streaming through the E2B API on a sandbox (set by the sandbox plane). */
  stopCommands: (sandboxId: string) => Promise<void> = async () => undefined;

  constructor(private readonly services: AirlockServices) {}

  get(id: string): E2bSandboxInfo | undefined {
    return this.info.get(id);
  }

  remember(id: string, info: E2bSandboxInfo): void {
    this.info.set(id, info);
    this.arm(id);
  }

  /** Moves a sandbox's end to `seconds` from now. */
  extend(id: string, seconds: number): void {
    const info = this.info.get(id);
    if (!info) return;
    info.endAt = new Date(Date.now() + seconds * 1000);
    this.arm(id);
  }

  forget(id: string): void {
    this.info.delete(id);
    clearTimeout(this.timers.get(id));
    this.timers.delete(id);
  }

  close(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  /** On timeout: terminated, or suspended when the sandbox asked for autoPause. */
  private arm(id: string): void {
    clearTimeout(this.timers.get(id));
    const info = this.info.get(id);
    if (!info) return;
    const timer = setTimeout(
      () => {
        this.timers.delete(id);
        const ending = this.stopCommands(id).then(async () => {
          if (info.autoPause) await this.services.sessions.suspend(id);
          else await this.services.sessions.terminate(id).then(() => this.forget(id));
        });
        ending.catch(() => undefined);
      },
      Math.max(0, info.endAt.getTime() - Date.now()),
    );
    timer.unref();
    this.timers.set(id, timer);
  }
}

/** A template: an image and optionally a contract. `base` is the default image and contract. */
export interface E2bTemplate {
  image: string;
  contract?: unknown;
}

/** Finds templates by name (the `templates` setting; `base` always exists). */
export type TemplateLookup = (name: string) => Promise<E2bTemplate | undefined>;

function e2bError(status: number, message: string): AirlockError {
  const code = status === 404 ? 'SESSION_NOT_FOUND' : status === 409 ? 'INVALID_STATE' : status === 501 ? 'NOT_AVAILABLE' : 'INVALID_REQUEST';
  return new AirlockError(code, message);
}

async function ownSandbox(services: AirlockServices, identity: Identity, id: string): Promise<SessionRecord> {
  const session = await services.store.getSession(id);
  if (!session || (identity.tenant !== EVERY_TENANT && session.tenant !== identity.tenant) || !(LIVE_STATES as readonly string[]).includes(session.state)) {
    throw e2bError(404, `sandbox ${id} not found`);
  }
  return session;
}

/** The envd access token of a sandbox for this caller: the caller's own key (its sandbox-plane requests are the same identity). */
function accessTokenOf(request: FastifyRequest): string {
  const key = request.headers['x-api-key'];
  return typeof key === 'string' ? key : '';
}

function createdBody(session: SessionRecord, request: FastifyRequest, templateId: string): Record<string, unknown> {
  return {
    sandboxID: session.id,
    templateID: templateId,
    clientID: 'airlock',
    alias: templateId,
    envdVersion: ENVD_VERSION,
    envdAccessToken: accessTokenOf(request),
    domain: null,
  };
}

/** Registers the control plane's routes. */
export function registerE2bControlRoutes(app: FastifyInstance, services: AirlockServices, sandboxes: E2bSandboxes, templates: TemplateLookup): void {
  const create = async (request: FastifyRequest, reply: FastifyReply) => {
    const body = parseE2b(createBody, request.body ?? {});
    const identity = identityOf(request);
    const template = await templates(body.templateID);
    if (!template) throw e2bError(404, `template ${body.templateID} not found: define it with \`airlock templates set ${body.templateID} --image IMAGE\``);
    const own = identity.tenant === EVERY_TENANT ? {} : { tenant: identity.tenant };
    const contract = services.parseContract(template.contract ?? services.defaultContract(), own);
    if (identity.tenant !== EVERY_TENANT && contract.identity.tenant !== identity.tenant)
      throw e2bError(403, `template ${body.templateID}'s contract is of another tenant`);
    if (!(await services.tenants.imageGiven(contract.identity.tenant, template.image)))
      throw e2bError(404, `template ${body.templateID}'s image ${template.image} is not available to this tenant`);
    const release = await services.admission.reserveSessions(contract.identity.tenant, 1);
    let session: SessionRecord;
    try {
      session = await services.sessions.create({ contract, imageName: template.image });
    } finally {
      release();
    }
    const timeout = body.timeout ?? DEFAULT_TIMEOUT_SECONDS;
    const startedAt = new Date();
    sandboxes.remember(session.id, {
      templateId: body.templateID,
      metadata: body.metadata ?? {},
      envVars: body.envVars ?? {},
      startedAt,
      endAt: new Date(startedAt.getTime() + timeout * 1000),
      autoPause: body.autoPause ?? false,
    });
    return reply.status(201).send(createdBody(session, request, body.templateID));
  };
  app.post(`${E2B_PREFIX}/sandboxes`, { config: { access: needs('session.manage') } }, create);
  app.post(`${E2B_PREFIX}/v2/sandboxes`, { config: { access: needs('session.manage') } }, create);

  const list = async (request: FastifyRequest<{ Querystring: Record<string, string | undefined> }>, reply: FastifyReply, paged: boolean) => {
    const identity = identityOf(request);
    const wanted = parseMetadataFilter(request.query['metadata']);
    const states = (request.query['state'] ?? '').split(',').filter((state) => state !== '');
    for (const state of states)
      if (state !== 'running' && state !== 'paused') throw e2bError(400, `state must be running or paused (got ${JSON.stringify(state)})`);
    const limit = request.query['limit'] === undefined ? 100 : Number(request.query['limit']);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw e2bError(400, 'limit must be a whole number from 1 to 1000');
    const after = request.query['nextToken'] ?? '';
    const all = (await services.sessions.list([...LIVE_STATES]))
      .filter((session) => identity.tenant === EVERY_TENANT || session.tenant === identity.tenant)
      .filter((session) => states.length === 0 || states.includes(e2bState(session.state)))
      .filter((session) => {
        const metadata = sandboxes.get(session.id)?.metadata ?? {};
        return Object.entries(wanted).every(([key, value]) => metadata[key] === value);
      })
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const start = after === '' ? 0 : all.findIndex((session) => session.id > after);
    const page = paged ? (start < 0 ? [] : all.slice(start, start + limit)) : all;
    const last = page.at(-1);
    if (paged && last && all.indexOf(last) < all.length - 1) void reply.header('x-next-token', last.id);
    return page.map((session) => sandboxBody(session, sandboxes.get(session.id)));
  };
  app.get<{ Querystring: Record<string, string | undefined> }>(`${E2B_PREFIX}/sandboxes`, { config: { access: needs('session.read') } }, (request, reply) =>
    list(request, reply, false),
  );
  app.get<{ Querystring: Record<string, string | undefined> }>(`${E2B_PREFIX}/v2/sandboxes`, { config: { access: needs('session.read') } }, (request, reply) =>
    list(request, reply, true),
  );

  app.get<{ Params: { sandboxID: string } }>(`${E2B_PREFIX}/sandboxes/:sandboxID`, { config: { access: needs('session.info') } }, async (request) => {
    const session = await ownSandbox(services, identityOf(request), request.params.sandboxID);
    return sandboxBody(session, sandboxes.get(session.id));
  });

  app.delete<{ Params: { sandboxID: string } }>(
    `${E2B_PREFIX}/sandboxes/:sandboxID`,
    { config: { access: needs('session.manage') } },
    async (request, reply) => {
      const session = await ownSandbox(services, identityOf(request), request.params.sandboxID);
      await services.sessions.terminate(session.id);
      sandboxes.forget(session.id);
      return reply.status(204).send();
    },
  );

  const setTimeoutRoute = async (request: FastifyRequest<{ Params: { sandboxID: string } }>, reply: FastifyReply) => {
    const body = parseE2b(timeoutBody, request.body ?? {});
    const session = await ownSandbox(services, identityOf(request), request.params.sandboxID);
    if (!sandboxes.get(session.id)) {
      const now = new Date();
      sandboxes.remember(session.id, { templateId: 'base', metadata: {}, envVars: {}, startedAt: new Date(session.createdAt), endAt: now, autoPause: false });
    }
    sandboxes.extend(session.id, body.timeout);
    return reply.status(204).send();
  };
  app.post<{ Params: { sandboxID: string } }>(`${E2B_PREFIX}/sandboxes/:sandboxID/timeout`, { config: { access: needs('session.manage') } }, setTimeoutRoute);
  app.post<{ Params: { sandboxID: string } }>(
    `${E2B_PREFIX}/sandboxes/:sandboxID/refreshes`,
    { config: { access: needs('session.manage') } },
    async (request, reply) => {
      const session = await ownSandbox(services, identityOf(request), request.params.sandboxID);
      const duration = (request.body as { duration?: unknown } | undefined)?.duration;
      sandboxes.extend(session.id, typeof duration === 'number' && duration > 0 ? Math.min(duration, 3600) : DEFAULT_TIMEOUT_SECONDS);
      return reply.status(204).send();
    },
  );

  app.post<{ Params: { sandboxID: string } }>(
    `${E2B_PREFIX}/sandboxes/:sandboxID/pause`,
    { config: { access: needs('session.manage') } },
    async (request, reply) => {
      const session = await ownSandbox(services, identityOf(request), request.params.sandboxID);
      if (e2bState(session.state) === 'paused') throw e2bError(409, `sandbox ${session.id} is already paused`);
      // E2B's pause keeps memory and processes: Airlock's suspend.
      await services.sessions.suspend(session.id);
      return reply.status(204).send();
    },
  );

  const resume = async (request: FastifyRequest<{ Params: { sandboxID: string } }>, reply: FastifyReply, connect: boolean) => {
    const body = parseE2b(connectBody, request.body ?? {});
    const session = await ownSandbox(services, identityOf(request), request.params.sandboxID);
    const wasPaused = e2bState(session.state) === 'paused';
    if (!connect && !wasPaused) throw e2bError(409, `sandbox ${session.id} is not paused`);
    if (wasPaused) await services.sessions.resume(session.id);
    if (body.timeout !== undefined) sandboxes.extend(session.id, body.timeout);
    return reply.status(wasPaused ? 201 : 200).send(createdBody(session, request, sandboxes.get(session.id)?.templateId ?? 'base'));
  };
  app.post<{ Params: { sandboxID: string } }>(`${E2B_PREFIX}/sandboxes/:sandboxID/resume`, { config: { access: needs('session.manage') } }, (request, reply) =>
    resume(request, reply, false),
  );
  app.post<{ Params: { sandboxID: string } }>(`${E2B_PREFIX}/sandboxes/:sandboxID/connect`, { config: { access: needs('session.manage') } }, (request, reply) =>
    resume(request, reply, true),
  );
  app.post<{ Params: { sandboxID: string } }>(
    `${E2B_PREFIX}/v2/sandboxes/:sandboxID/connect`,
    { config: { access: needs('session.manage') } },
    (request, reply) => resume(request, reply, true),
  );

  app.get<{ Params: { sandboxID: string } }>(`${E2B_PREFIX}/sandboxes/:sandboxID/metrics`, { config: { access: needs('session.info') } }, async (request) => {
    await ownSandbox(services, identityOf(request), request.params.sandboxID);
    return [];
  });

  // What Airlock does not do: E2B's status and error shape, and why.
  const unsupported = (what: string) => async () => {
    throw e2bError(501, `${what} is not supported by Airlock: templates name an Airlock image (\`airlock templates set NAME --image IMAGE\`)`);
  };
  app.post(`${E2B_PREFIX}/templates`, { config: { access: needs('session.manage') } }, unsupported('building templates'));
  app.post(`${E2B_PREFIX}/v2/templates`, { config: { access: needs('session.manage') } }, unsupported('building templates'));
  app.post(`${E2B_PREFIX}/v3/templates`, { config: { access: needs('session.manage') } }, unsupported('building templates'));
  app.post(`${E2B_PREFIX}/sandboxes/:sandboxID/snapshots`, { config: { access: needs('snapshot.manage') } }, async () => {
    throw e2bError(501, 'E2B snapshots are not supported here yet: use `airlock snapshots create ID` and `airlock sessions fork ID`');
  });
}

/** Parses a body, or answers E2B's 400 with what is wrong. */
function parseE2b<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw e2bError(400, `invalid request body: ${issue ? `${issue.path.join('.') || '(body)'}: ${issue.message}` : 'malformed'}`);
  }
  return parsed.data;
}

/** Default `base` template lookup: the default image and contract. */
export function baseTemplateOnly(): TemplateLookup {
  return async (name) => (name === 'base' ? { image: DEFAULT_IMAGE } : undefined);
}
