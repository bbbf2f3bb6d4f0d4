/**
 * The OpenAPI document of the HTTP API, served at /openapi.json. Tool
 * argument schemas come from the same zod schemas the pipeline validates
 * with, so the document cannot drift from what the server accepts.
 */
import { z } from 'zod';
import { TOOL_SCHEMAS } from '../core/tool-schemas.js';
import { ERROR_STATUS } from '../core/errors.js';
import { RESPONSE_SCHEMAS } from './response-schemas.js';

const json = (schema: Record<string, unknown>) => ({ content: { 'application/json': { schema } } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const errorResponse = { description: 'error', ...json(ref('Error')) };
const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };

function op(summary: string, extra: Record<string, unknown> = {}, answer?: keyof typeof RESPONSE_SCHEMAS): Record<string, unknown> {
  const ok = answer ? { description: 'ok', ...json(ref(answer)) } : { description: 'ok' };
  return { summary, responses: { '200': ok, '4XX': errorResponse, '5XX': errorResponse }, ...extra };
}

function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

/** Builds the OpenAPI 3.1 document. */
export function openApiDocument(version: string): Record<string, unknown> {
  const toolSchemas: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(TOOL_SCHEMAS)) {
    const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    toolSchemas[`${name.replace('.', '_')}_arguments`] = rest;
  }
  const responseSchemas = Object.fromEntries(Object.entries(RESPONSE_SCHEMAS).map(([name, schema]) => [name, jsonSchemaOf(schema)]));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Airlock API',
      version,
      description: 'Sessions on isolated machines; every tool call authorized, held for approval where required, and audited.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: { code: { type: 'string', enum: Object.keys(ERROR_STATUS) }, message: { type: 'string' }, details: { type: 'object' } },
            },
          },
        },
        CreateSession: {
          type: 'object',
          additionalProperties: false,
          properties: {
            image: { type: 'string' },
            contract: { description: 'session contract (object, or JSON/YAML text)' },
            mode: { type: 'string', enum: ['machine', 'per-call'] },
            sandbox: { type: 'string', description: 'sandbox driver: gvisor (default) or microvm; overrides nothing: a contract naming another is refused' },
            idleTimeoutSeconds: { type: 'integer', minimum: 1 },
          },
        },
        ...toolSchemas,
        ...responseSchemas,
      },
    },
    security: [{ bearer: [] }],
    paths: {
      '/healthz': { get: op('liveness', { security: [] }) },
      '/openapi.json': { get: op('this document', { security: [] }) },
      '/metrics': {
        get: op('Prometheus metrics in the text exposition format (an admin or a metrics token; `serve --metrics-listen` serves them without one)', {
          responses: { '200': { description: 'the exposition', content: { 'text/plain': { schema: { type: 'string' } } } }, '4XX': errorResponse },
        }),
      },
      '/v1/sessions': {
        get: op('list sessions', {}, 'SessionList'),
        post: op('create a session and start its machine', {
          requestBody: json(ref('CreateSession')),
          responses: { '201': { description: 'created', ...json(ref('Session')) }, '4XX': errorResponse, '5XX': errorResponse },
        }),
      },
      '/v1/sessions/{id}': {
        parameters: [idParam],
        get: op('get a session with its meters', {}, 'Session'),
        delete: op('terminate: destroy machine, disk and memory images', {}, 'Session'),
      },
      '/v1/sessions/{id}/suspend': { parameters: [idParam], post: op('checkpoint memory and processes, stop the machine', {}, 'Session') },
      '/v1/sessions/{id}/resume': { parameters: [idParam], post: op('restore the machine where it stopped', {}, 'Session') },
      '/v1/sessions/{id}/restart': {
        parameters: [idParam],
        post: op('a fresh machine on the same disk, for a degraded (silent) or failed machine: files kept, processes and memory lost', {}, 'Session'),
      },
      '/v1/sessions/{id}/pause': { parameters: [idParam], post: op('freeze the machine in place', {}, 'Session') },
      '/v1/sessions/{id}/guard/reset': { parameters: [idParam], post: op('reset the runaway breaker', {}, 'Session') },
      '/v1/sessions/{id}/audit': {
        parameters: [idParam],
        get: op(
          'audit records of the session (afterSeq and limit page through them; tail=N gives the last N)',
          {
            parameters: [
              { name: 'afterSeq', in: 'query', schema: { type: 'integer' } },
              { name: 'limit', in: 'query', schema: { type: 'integer' } },
              { name: 'tail', in: 'query', schema: { type: 'integer' } },
            ],
          },
          'AuditLog',
        ),
      },
      '/v1/sessions/{id}/audit/verify': {
        parameters: [idParam],
        get: op('verify the hash chain against the audit key and the heads kept outside the database', {}, 'AuditVerification'),
      },
      '/v1/sessions/{id}/audit/export': {
        parameters: [idParam],
        get: op('every audit record, then the chain head signed with the audit key, as JSON lines ({kind: record|head, ...})', {
          responses: {
            '200': { description: 'JSON lines', content: { 'application/x-ndjson': { schema: { type: 'string' } } } },
            '4XX': errorResponse,
            '5XX': errorResponse,
          },
        }),
      },
      '/v1/audit/system/verify': {
        get: op('verify the system chain (token, tenant and secret records; sessionId is empty), admin only', {}, 'AuditVerification'),
      },
      '/v1/audit/system/export': {
        get: op('every record of the system chain, then its head signed with the audit key, as JSON lines; admin only', {
          responses: {
            '200': { description: 'JSON lines', content: { 'application/x-ndjson': { schema: { type: 'string' } } } },
            '4XX': errorResponse,
            '5XX': errorResponse,
          },
        }),
      },
      '/v1/audit/verify': {
        get: op(
          'verify every chain: the system chain, every session, and every chain the head file outside the database names (those the database lost are listed in missing); admin only',
          {},
          'AuditReport',
        ),
      },
      '/v1/sessions/{id}/exec': {
        parameters: [idParam, { name: 'stream', in: 'query', schema: { type: 'boolean' } }],
        post: op('run a command; with stream=true the answer is NDJSON lines {type: stdout|stderr (base64 data) | outcome | error}', {
          requestBody: json(ref('exec_arguments')),
          responses: { '200': { description: 'completed' }, '202': { description: 'held for approval' }, '4XX': errorResponse, '5XX': errorResponse },
        }),
      },
      '/v1/sessions/{id}/tools/{tool}': {
        parameters: [idParam, { name: 'tool', in: 'path', required: true, schema: { type: 'string', enum: Object.keys(TOOL_SCHEMAS) } }],
        post: op('run any tool through the airlock', {
          responses: {
            '200': { description: 'completed', ...json(ref('ToolCallOutcome')) },
            '202': { description: 'held for approval', ...json(ref('ToolCallOutcome')) },
            '4XX': errorResponse,
            '5XX': errorResponse,
          },
        }),
      },
      '/v1/sessions/{id}/resize': {
        parameters: [idParam],
        post: op(
          'change the CPU and memory limits of the running machine in place, up to the contract ceiling (default 4× the start)',
          {
            requestBody: json({ type: 'object', additionalProperties: false, properties: { cpus: { type: 'number' }, memoryMb: { type: 'integer' } } }),
          },
          'Session',
        ),
      },
      '/v1/sessions/{id}/keep-awake': {
        parameters: [idParam],
        post: op(
          'keep the machine from pausing or suspending when idle (false lets it sleep again)',
          {
            requestBody: json({ type: 'object', required: ['keepAwake'], additionalProperties: false, properties: { keepAwake: { type: 'boolean' } } }),
          },
          'Session',
        ),
      },
      '/v1/sessions/{id}/ports': {
        parameters: [idParam],
        get: op('list exposed ports', {}, 'ExposedPortList'),
        post: op('expose a port of the machine through the server', {
          requestBody: json({
            type: 'object',
            required: ['port'],
            additionalProperties: false,
            properties: { port: { type: 'integer', minimum: 1, maximum: 65535 } },
          }),
          responses: { '201': { description: 'exposed', ...json(ref('ExposedPort')) }, '4XX': errorResponse, '5XX': errorResponse },
        }),
      },
      '/v1/sessions/{id}/ports/{port}': {
        parameters: [idParam, { name: 'port', in: 'path', required: true, schema: { type: 'integer' } }],
        delete: op('stop exposing a port'),
      },
      '/v1/sessions/{id}/ports/{port}/{path}': {
        parameters: [
          idParam,
          { name: 'port', in: 'path', required: true, schema: { type: 'integer' } },
          { name: 'path', in: 'path', required: true, schema: { type: 'string' } },
        ],
        get: op('HTTP proxied to the exposed port inside the machine (any method; wakes a sleeping machine; 502 PORT_UNREACHABLE when nothing listens)'),
      },
      '/v1/sessions/{id}/desktop': {
        parameters: [idParam],
        get: op('the display: whether the session has one (available), width, height, the takeover in progress (or null) and the path of the live view'),
      },
      '/v1/sessions/{id}/desktop/screenshot': {
        parameters: [idParam],
        post: op('the screen as PNG, through the airlock (tool desktop.screenshot); 202 with the approval when held', {
          responses: {
            '200': { description: 'the screen', content: { 'image/png': { schema: { type: 'string', format: 'binary' } } } },
            '202': { description: 'held for approval', ...json(ref('ToolCallOutcome')) },
            '4XX': errorResponse,
            '5XX': errorResponse,
          },
        }),
      },
      '/v1/sessions/{id}/desktop/actions': {
        parameters: [idParam],
        post: op('one mouse or keyboard action, through the airlock (tool desktop.act)', {
          requestBody: json(ref('desktop_act_arguments')),
          responses: {
            '200': { description: 'completed', ...json(ref('ToolCallOutcome')) },
            '202': { description: 'held for approval', ...json(ref('ToolCallOutcome')) },
            '4XX': errorResponse,
            '5XX': errorResponse,
          },
        }),
      },
      '/v1/sessions/{id}/desktop/thumbnails/{name}': {
        parameters: [idParam, { name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
        get: op("a kept screen thumbnail (PNG): a desktop call's, named by its call id, or a takeover frame"),
      },
      '/v1/sessions/{id}/desktop/takeover': {
        parameters: [idParam],
        post: op('take the desktop over: agent actions wait (reason TAKEOVER) until it is handed back; recorded', {
          requestBody: json({ type: 'object', additionalProperties: false, properties: { by: { type: 'string' } } }),
          responses: { '201': { description: 'taken over' }, '4XX': errorResponse, '5XX': errorResponse },
        }),
        delete: op('hand the desktop back'),
      },
      '/v1/sessions/{id}/desktop/takeovers/{takeoverId}': {
        parameters: [idParam, { name: 'takeoverId', in: 'path', required: true, schema: { type: 'string' } }],
        get: op("a takeover's recording: frames (thumbnail names) and input events"),
      },
      '/v1/sessions/{id}/desktop/vnc': {
        parameters: [idParam, { name: 'takeover', in: 'query', schema: { type: 'string' } }],
        get: op("WebSocket: the display's VNC stream (RFB 3.8, security None), view-only unless ?takeover= names the takeover in progress"),
      },
      '/v1/tenants/{tenant}/usage': {
        parameters: [{ name: 'tenant', in: 'path', required: true, schema: { type: 'string' } }],
        get: op('meters summed over the sessions of a tenant'),
      },
      '/v1/warm-pool': {
        get: op("this server's warm pools: machines kept ready per class of session, claims and misses (`airlock serve --warm-pool N`)", {}, 'WarmPool'),
      },
      '/v1/nodes': { get: op('the nodes sharing the store: address, state (active, draining, left, lost), sessions held, last heartbeat', {}, 'NodeList') },
      '/v1/nodes/{id}/drain': {
        parameters: [idParam],
        post: op('drain a node: it suspends its sessions, which resume on other nodes at their next call; a restart makes it active again', {}, 'Node'),
      },
      '/v1/approvals': { get: op('list approvals (state=pending for open ones)', {}, 'ApprovalList') },
      '/v1/approvals/events': { get: op('server-sent events: approval.requested, approval.decided') },
      '/v1/approvals/{id}': { parameters: [idParam], get: op('get an approval; waitSeconds long-polls for its outcome', {}, 'Approval') },
      '/v1/approvals/{id}/approve': { parameters: [idParam], post: op('approve: the call runs once', {}, 'Approval') },
      '/v1/approvals/{id}/deny': { parameters: [idParam], post: op('deny: the call never runs', {}, 'Approval') },
      '/v1/tokens': {
        get: op('list API tokens (admin): ids, tenant, role, name, created, last used, revoked; never secrets'),
        post: op('make an API token of a tenant (admin); the secret is in the answer once, and stored only as a hash', {
          requestBody: json({
            type: 'object',
            additionalProperties: false,
            required: ['tenant'],
            properties: {
              tenant: { type: 'string' },
              role: { type: 'string', enum: ['admin', 'operator', 'approver', 'agent', 'metrics'] },
              name: { type: 'string', maxLength: 200 },
            },
          }),
          responses: { '201': { description: 'created: {id, token, tenant, role, name, createdAt}' }, '4XX': errorResponse, '5XX': errorResponse },
        }),
      },
      '/v1/tokens/{id}': { parameters: [idParam], delete: op('revoke an API token (admin): it answers 401 from now on') },
      '/v1/webhooks': {
        get: op('list lifecycle webhook endpoints (admin): url, events, tenant, state, deliveries by state; never secrets'),
        post: op('register a lifecycle webhook endpoint (admin); its whsec_ signing secret is in the answer once (Standard Webhooks 1.0)', {
          requestBody: json({
            type: 'object',
            additionalProperties: false,
            required: ['url', 'events'],
            properties: {
              url: { type: 'string', maxLength: 2000 },
              events: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 50 },
              tenant: { type: 'string' },
            },
          }),
          responses: {
            '201': { description: 'created: {id, url, events, tenant, state, createdAt, createdBy, secret}' },
            '4XX': errorResponse,
            '5XX': errorResponse,
          },
        }),
      },
      '/v1/webhooks/{id}': { parameters: [idParam], delete: op('remove a webhook endpoint and its pending deliveries (admin)') },
      '/v1/webhooks/{id}/test': { parameters: [idParam], post: op('send a signed webhook.test event to an endpoint now (admin): {id, status, ok, error}') },
      '/v1/tenants': { get: op('list tenants with settings (admin)') },
      '/v1/tenants/{tenant}': {
        parameters: [{ name: 'tenant', in: 'path', required: true, schema: { type: 'string' } }],
        get: op("a tenant's quotas (admin); a tenant nobody configured has none"),
        put: op("change some of a tenant's quotas or its images (admin); null removes a limit, absent keys stay", {
          requestBody: json({
            type: 'object',
            additionalProperties: false,
            properties: {
              ...Object.fromEntries(
                ['maxSessions', 'maxConcurrentCalls', 'maxForkBranches', 'maxForkDepth'].map((key) => [key, { type: ['integer', 'null'], minimum: 0 }]),
              ),
              images: { type: ['array', 'null'], items: { type: 'string' }, description: 'the images its sessions may use; null: every image' },
            },
          }),
        }),
      },
      '/v1/secrets': { get: op('list secrets the egress gateway injects: names, sizes and dates, never values') },
      '/v1/secrets/{name}': {
        parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' } }],
        put: op('store a secret (encrypted at rest); the value is never returned', {
          requestBody: json({
            type: 'object',
            additionalProperties: false,
            required: ['value'],
            properties: {
              value: { type: 'string', minLength: 1 },
              tenants: {
                type: ['array', 'null'],
                items: { type: 'string' },
                description: 'the tenants whose sessions may use it; null or absent on a new secret: every tenant; absent on a replaced one: unchanged',
              },
            },
          }),
        }),
        delete: op('delete a secret; sessions bound to it get a clear error on their next request'),
      },
      '/v1/sessions/{id}/contract': {
        parameters: [idParam],
        get: op('the contract the session runs under, with its version', {}, 'SessionContract'),
        patch: op(
          "replace a running session's network lists: a new contract version, audited as contract.updated, applied to the gateway at once. filesystem lists cannot change (the machine's mounts enforce them): a different one is refused with INVALID_STATE",
          {
            requestBody: json({
              type: 'object',
              additionalProperties: false,
              minProperties: 1,
              properties: {
                network: {
                  type: 'object',
                  properties: { allowedDomains: { type: 'array', items: { type: 'string' } }, deniedDomains: { type: 'array', items: { type: 'string' } } },
                },
                filesystem: { type: 'object', description: "must equal the session's lists: readOnly, denyRead, denyWrite, allowWrite" },
              },
            }),
          },
        ),
      },
      '/v1/login': {
        post: op(
          'console login: exchanges the API token for an HttpOnly, SameSite=Strict login cookie and the CSRF token to send as X-Airlock-CSRF',
          {
            security: [],
            requestBody: json({ type: 'object', required: ['token'], additionalProperties: false, properties: { token: { type: 'string', minLength: 1 } } }),
          },
          'Login',
        ),
      },
      '/v1/logout': { post: op('end the console login of the cookie and clear the cookie', { security: [] }) },
      '/v1/whoami': { get: op("the identity of the caller (bearer token or console login), with the login's CSRF token", {}, 'Login') },
      '/v1/events': {
        get: op(
          'server-sent events: session.changed (session view), approval.changed (approval), audit.appended (records, with sessionId only), stream.ready, stream.resync; heartbeat comments every 15 s',
          {
            parameters: [{ name: 'sessionId', in: 'query', schema: { type: 'string' } }],
          },
        ),
      },
      '/v1/sessions/{id}/terminal': {
        parameters: [idParam, { name: 'client', in: 'query', schema: { type: 'string' } }],
        get: op(
          "takeover terminal: WebSocket (subprotocol airlock.terminal.v1) to a shell on a PTY in the machine; the session's tool calls wait (reason TAKEOVER) until the socket closes; recorded (asciicast v2). A plain GET says whether it is available (409 no machine, 501 NOT_AVAILABLE driver without PTYs)",
        ),
      },
      '/v1/sessions/{id}/terminal/recordings/{takeoverId}': {
        parameters: [idParam, { name: 'takeoverId', in: 'path', required: true, schema: { type: 'string' } }],
        get: op(
          'the asciicast v2 recording of a terminal takeover (application/x-asciicast), as linked from its takeover.started / takeover.ended audit records',
        ),
      },
      '/v1/images': { get: op('list images', {}, 'ImageList') },
      '/v1/images/{name}': { parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }], get: op('get an image', {}, 'Image') },
      '/v1/sessions/{id}/snapshots': {
        parameters: [idParam],
        post: op('snapshot memory, processes and disk of a running session at one instant; it keeps running', {
          requestBody: json({ type: 'object', additionalProperties: false, properties: { name: { type: 'string', minLength: 1, maxLength: 128 } } }),
          responses: { '201': { description: 'created', ...json(ref('Snapshot')) }, '4XX': errorResponse, '5XX': errorResponse },
        }),
      },
      '/v1/sessions/{id}/fork': {
        parameters: [idParam],
        post: op(
          'fork into count branches (from the session now, or from snapshotId); each branch is a new session or {index, sessionId, error}; in a cluster, branches go to the nodes with the most free capacity',
          {
            requestBody: json({
              type: 'object',
              required: ['count'],
              additionalProperties: false,
              properties: {
                count: { type: 'integer', minimum: 1 },
                snapshotId: { type: 'string' },
                firstBranchIndex: {
                  type: 'integer',
                  minimum: 0,
                  description: 'lineage index of the first branch: set by a node asking another for its share of a fork',
                },
              },
            }),
            responses: { '201': { description: 'forked', ...json(ref('ForkResult')) }, '4XX': errorResponse, '5XX': errorResponse },
          },
        ),
      },
      '/v1/snapshots': {
        get: op(
          'list snapshots (sessionId to filter; all=true includes deleted ones)',
          {
            parameters: [
              { name: 'sessionId', in: 'query', schema: { type: 'string' } },
              { name: 'all', in: 'query', schema: { type: 'boolean' } },
            ],
          },
          'SnapshotList',
        ),
      },
      '/v1/snapshots/{id}': {
        parameters: [idParam],
        get: op('get a snapshot', {}, 'Snapshot'),
        delete: op("delete a snapshot's bytes (the record stays)", {}, 'Snapshot'),
      },
    },
  };
}
