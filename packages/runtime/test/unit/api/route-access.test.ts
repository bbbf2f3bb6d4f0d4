/**
 * Every route the router holds, read from the router's own registrations
 * (never a list kept here), over a real listening server (fake driver, real
 * SQLite): without a credential each non-public route answers 401, and
 * every other spelling of its path (percent-encodings, absolute form, `//`,
 * dot segments, letter case, trailing slash, HEAD, OPTIONS) answers 400,
 * 401 or 404, never a success; each role lacking the route's permission
 * gets 403. A route registered without a declaration stops the server from
 * starting.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../../src/server.js';
import { FakeDriver } from '../../../src/drivers/fake/fake-driver.js';
import { DirectoryDisks, StaticImages } from '../../support/core-fixture.js';
import { buildHttpServer, routesOf, type RegisteredRoute } from '../../../src/api/http-server.js';
import { needs, roleMay, ROLE_PERMISSIONS } from '../../../src/api/access-rules.js';
import { Authentication, installationTokens } from '../../../src/api/authentication.js';
import { ConsoleLogins } from '../../../src/api/console-logins.js';
import { ActivityFeed } from '../../../src/api/activity-feed.js';
import { ConsoleAssets } from '../../../src/api/console-assets.js';
import type { Role } from '../../../src/core/tenancy.js';

const TOKEN = 'route-access-test-token-0123456789';

interface RawAnswer {
  status: number;
  code: string | undefined;
  body: string;
}

/** Sends `target` exactly as given (no URL normalisation, unlike fetch) and reads the answer's start. */
function raw(port: number, method: string, target: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port, method, path: target, headers: { ...headers, connection: 'close' }, agent: false }, (response) => {
      let body = '';
      // Streams (SSE) never end: what came within a moment is enough to tell an answer.
      const timer = setTimeout(() => response.destroy(), 500);
      const done = () => {
        clearTimeout(timer);
        let code: string | undefined;
        try {
          const parsed = JSON.parse(body) as { error?: { code?: string }; code?: unknown; message?: unknown };
          // The E2B API answers in E2B's shape, `{ code: STATUS, message: 'CODE: why' }`.
          code =
            parsed.error?.code ?? (typeof parsed.code === 'number' && typeof parsed.message === 'string' ? /^([A-Z_]+):/.exec(parsed.message)?.[1] : undefined);
        } catch {
          code = undefined;
        }
        resolve({ status: response.statusCode ?? 0, code, body });
      };
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', done);
      response.on('close', done);
    });
    request.on('error', reject);
    request.end();
  });
}

/** A concrete path for a route's url: each parameter becomes `x1`, the wildcard `a`. */
function concrete(url: string): string {
  return url.replace(/:[A-Za-z]+/g, 'x1').replace(/\*$/, 'a');
}

/** The methods a route is called with here (HEAD follows its GET; a wildcard route is tried with a few). */
function methodsOf(route: RegisteredRoute): string[] {
  return route.methods.filter((method) => ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(method));
}

/** Other spellings of `path` that a strict reading must refuse (400). */
function refusedSpellings(path: string, port: number): string[] {
  const second = path.indexOf('/', 1);
  const firstLetter = path.slice(1).search(/[a-z]/) + 1;
  const letter = path[firstLetter] ?? 'v';
  return [
    `${path.slice(0, firstLetter)}%${letter.charCodeAt(0).toString(16)}${path.slice(firstLetter + 1)}`,
    `${path.slice(0, firstLetter)}%${letter.charCodeAt(0).toString(16).toUpperCase()}${path.slice(firstLetter + 1)}`,
    `http://127.0.0.1:${port}${path}`,
    `/${path}`,
    `${path.slice(0, second < 0 ? path.length : second)}//${second < 0 ? '' : path.slice(second + 1)}`,
    `/x/..${path}`,
    `/.${path}`,
    `/x/%2e%2e${path}`,
    second < 0 ? `${path}%2Fx` : `${path.slice(0, second)}%2F${path.slice(second + 1)}`,
    second < 0 ? `${path}\\x` : `${path.slice(0, second)}\\${path.slice(second + 1)}`,
    `${path}%00`,
  ];
}

describe('access declared at every route, decided on the matched route', () => {
  let server: RunningServer;
  let root: string;
  let port: number;
  let routes: readonly RegisteredRoute[];
  const roleTokens = new Map<Role, string>();
  /** the same roles as E2B keys: E2B routes are called with `X-API-Key` as E2B's clients do */
  const roleKeys = new Map<Role, string>();

  before(async () => {
    root = mkdtempSync('/tmp/airlock-route-access-');
    const consoleDir = join(root, 'console');
    mkdirSync(consoleDir, { recursive: true });
    writeFileSync(join(consoleDir, 'index.html'), '<!doctype html><title>console</title>');
    server = await startServer({
      dataDir: join(root, 'data'),
      host: '127.0.0.1',
      port: 0,
      token: TOKEN,
      driver: new FakeDriver(),
      disks: new DirectoryDisks(join(root, 'disks')),
      images: new StaticImages(),
      consoleDir,
    });
    port = Number(new URL(server.url).port);
    routes = routesOf(server.http);
    roleTokens.set('admin', TOKEN);
    for (const role of ['operator', 'approver', 'agent', 'metrics'] as const) {
      roleTokens.set(role, (await server.services.tokens.create({ tenant: 'acme', role, name: role }, 'test')).secret);
    }
    for (const role of ['admin', 'operator', 'approver', 'agent', 'metrics'] as const) {
      roleKeys.set(role, (await server.services.tokens.create({ tenant: 'acme', role, name: `${role}-e2b`, e2b: true }, 'test')).secret);
    }
  });

  after(async () => {
    await server?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('reads the routes from the router, every one with a declaration', () => {
    assert.ok(routes.length > 50, `only ${routes.length} routes seen`);
    for (const url of [
      '/v1/sessions/:id/tools/:tool',
      '/v1/sessions/:id/ports/:port/*',
      '/v1/sessions/:id/terminal',
      '/v1/sessions/:id/desktop/vnc',
      '/mcp',
      '/v1/warm-pool',
      '/e2b/v2/sandboxes',
      '/e2b/process.Process/Start',
      '/e2b/files',
    ]) {
      assert.ok(
        routes.some((route) => route.url === url),
        `${url} is among the routes`,
      );
    }
    const publicRoutes = routes.filter((route) => route.access.kind !== 'permission').map((route) => `${route.methods.join(',')} ${route.url}`);
    assert.deepEqual(publicRoutes.sort(), [
      'GET /e2b/health',
      'GET /healthz',
      'GET /openapi.json',
      'HEAD /e2b/health',
      'HEAD /healthz',
      'HEAD /openapi.json',
      'POST /v1/login',
      'POST /v1/logout',
    ]);
  });

  it('answers 401 to every non-public route called without a credential', async () => {
    for (const route of routes) {
      if (route.access.kind !== 'permission') continue;
      for (const method of [...methodsOf(route), ...(route.methods.includes('HEAD') ? ['HEAD'] : [])]) {
        const answer = await raw(port, method, concrete(route.url));
        assert.equal(answer.status, 401, `${method} ${route.url}: ${answer.status} ${answer.body}`);
      }
    }
  });

  it('refuses every other spelling of every route with 400, with or without a credential', async () => {
    for (const route of routes) {
      const path = concrete(route.url);
      for (const method of methodsOf(route).slice(0, 2)) {
        for (const target of refusedSpellings(path, port)) {
          for (const headers of [{}, { authorization: `Bearer ${TOKEN}` }]) {
            const answer = await raw(port, method, target, headers);
            assert.equal(answer.status, 400, `${method} ${target}: ${answer.status} ${answer.body}`);
            assert.equal(answer.code, 'INVALID_REQUEST', `${method} ${target}`);
          }
        }
      }
    }
  });

  it('answers letter case, trailing slash, HEAD and OPTIONS with 401 or 404, never a success', async () => {
    for (const route of routes) {
      if (route.access.kind !== 'permission') continue;
      const path = concrete(route.url);
      const spellings = [
        ...methodsOf(route).map((method) => [method, path.toUpperCase()]),
        ...methodsOf(route).map((method) => [method, path.replace(/^\/(v1|mcp)/, (prefix) => prefix.toUpperCase())]),
        ...methodsOf(route).map((method) => [method, `${path}/`]),
        ['HEAD', path],
        ['OPTIONS', path],
        ['OPTIONS', '*'],
      ] as const;
      for (const [method, target] of spellings) {
        const answer = await raw(port, method, target);
        assert.ok([400, 401, 404].includes(answer.status), `${method} ${target}: ${answer.status} ${answer.body}`);
        assert.doesNotMatch(answer.body, /<title>console/, `${method} ${target} is not served as a console page`);
      }
    }
    // The control: outside the API, a GET is the console's.
    assert.match((await raw(port, 'GET', '/sessions/x1')).body, /<title>console/);
  });

  it('answers 403 ROLE_FORBIDDEN to each role lacking the route permission, and lets each holder past', async () => {
    for (const route of routes) {
      const access = route.access;
      if (access.kind !== 'permission') continue;
      for (const role of Object.keys(ROLE_PERMISSIONS) as Role[]) {
        const bearer = { authorization: `Bearer ${roleTokens.get(role) ?? ''}` };
        const headers: Record<string, string> = route.url.startsWith('/e2b/') ? { 'x-api-key': roleKeys.get(role) ?? '' } : bearer;
        if (roleMay(role, access.permission)) {
          // Only reads are called as a holder: they change nothing whatever they answer.
          if (!route.methods.includes('GET')) continue;
          const answer = await raw(port, 'GET', concrete(route.url), headers);
          assert.notEqual(answer.status, 401, `${role} GET ${route.url}`);
          assert.notEqual(answer.code, 'ROLE_FORBIDDEN', `${role} GET ${route.url}`);
          continue;
        }
        for (const method of methodsOf(route)) {
          const answer = await raw(port, method, concrete(route.url), headers);
          assert.equal(answer.status, 403, `${role} ${method} ${route.url}: ${answer.status} ${answer.body}`);
          assert.equal(answer.code, 'ROLE_FORBIDDEN', `${role} ${method} ${route.url}`);
        }
      }
    }
  });

  it('answers 400 INVALID_ARGUMENTS, naming it, to a query parameter given twice', async () => {
    const headers = { authorization: `Bearer ${TOKEN}` };
    for (const target of [
      '/v1/approvals?sessionId=X&sessionId=X',
      '/v1/snapshots?sessionId=a&sessionId=b',
      '/v1/events?sessionId=a&session%49d=b',
      '/v1/sessions?x=1&x=2',
    ]) {
      const answer = await raw(port, 'GET', target, headers);
      assert.equal(answer.status, 400, `${target}: ${answer.body}`);
      assert.equal(answer.code, 'INVALID_ARGUMENTS');
      assert.match(answer.body, /query parameter \\"(sessionId|x)\\" is given more than once/);
    }
    assert.equal((await raw(port, 'GET', '/v1/approvals?sessionId=X&state=pending', headers)).status, 200, 'distinct parameters pass');
  });

  it('refuses to start a server with a route that declares no access', async () => {
    const options = {
      token: TOKEN,
      version: 'test',
      authentication: new Authentication(installationTokens(TOKEN), new ConsoleLogins()),
      activity: new ActivityFeed(),
      console: ConsoleAssets.load(undefined),
    };
    const undeclared = buildHttpServer(server.services, options);
    await assert.rejects(async () => {
      undeclared.post('/v1/undeclared', async () => 'ran');
      await undeclared.ready();
    }, /route POST \/v1\/undeclared declares no access/);
    await undeclared.close().catch(() => undefined);
    // The control: the same route with a declaration starts.
    const declared = buildHttpServer(server.services, options);
    declared.post('/v1/declared', { config: { access: needs('session.manage') } }, async () => 'ran');
    await declared.ready();
    await declared.close();
  });
});
