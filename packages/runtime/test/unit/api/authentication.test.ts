import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Authentication, approverName, cookieValue, installationTokens, LOGIN_COOKIE, type CredentialCarrier, type Identity } from '../../../src/api/authentication.js';
import { ConsoleLogins, MAX_LOGINS_PER_TOKEN } from '../../../src/api/console-logins.js';
import { isAirlockError } from '../../../src/core/errors.js';
import { tapAuditAppends } from '../../../src/api/audit-tap.js';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteStore } from '../../../src/stores/sqlite/sqlite-store.js';
import { AuditLog } from '../../../src/audit/audit-log.js';
import { systemClock } from '../../../src/core/clock.js';
import { waitFor } from '../../support/wait-for.js';
import { ApiTokens, secretHashOf, TOKEN_SECRET_PREFIX } from '../../../src/core/api-tokens.js';

const TOKEN = 'installation-token-0123456789';

function request(method: string, headers: Record<string, string>): CredentialCarrier {
  return { method, headers } as CredentialCarrier;
}

async function codeOf(work: () => unknown): Promise<string> {
  try {
    await work();
  } catch (error) {
    assert.ok(isAirlockError(error), `expected an AirlockError, got ${String(error)}`);
    return error.code;
  }
  return 'NO ERROR';
}

async function setup(now: () => Date = () => new Date()) {
  const logins = new ConsoleLogins({ lifetimeSeconds: 60, now });
  const authentication = new Authentication(installationTokens(TOKEN), logins);
  const login = logins.create(await authentication.grantOf(TOKEN));
  const cookie = `theme=dark; ${LOGIN_COOKIE}=${login.id}`;
  return { logins, authentication, login, cookie };
}

describe('authentication: a request becomes an identity', () => {
  it('the installation token is the admin of every tenant; a wrong or truncated token is not', async () => {
    const tokens = installationTokens(TOKEN);
    assert.deepEqual(await tokens.find(TOKEN), { tokenId: 'admin', tenant: '*', role: 'admin', name: 'admin' });
    assert.equal(await tokens.find(TOKEN.slice(0, -1)), undefined);
    assert.equal(await tokens.find(`${TOKEN}x`), undefined);
    assert.equal(await tokens.find(''), undefined);
  });

  it('a bearer token gives a token identity, unchanged by any cookie', async () => {
    const { authentication, cookie } = await setup();
    const identity = await authentication.identify(request('POST', { authorization: `Bearer ${TOKEN}`, cookie }));
    assert.deepEqual(identity, { kind: 'token', tokenId: 'admin', tenant: '*', role: 'admin', name: 'admin' } satisfies Identity);
  });

  it('a wrong bearer token is refused even beside a valid login cookie', async () => {
    const { authentication, cookie } = await setup();
    assert.equal(await codeOf(() => authentication.identify(request('GET', { authorization: 'Bearer nope', cookie }))), 'UNAUTHORIZED');
    assert.equal(await codeOf(() => authentication.identify(request('GET', { authorization: TOKEN }))), 'UNAUTHORIZED', 'no Bearer prefix');
  });

  it('no credential at all is UNAUTHORIZED; a cookie of no live login is LOGIN_EXPIRED', async () => {
    const { authentication } = await setup();
    assert.equal(await codeOf(() => authentication.identify(request('GET', {}))), 'UNAUTHORIZED');
    assert.equal(await codeOf(() => authentication.identify(request('GET', { cookie: 'other=1' }))), 'UNAUTHORIZED');
    assert.equal(await codeOf(() => authentication.identify(request('GET', { cookie: `${LOGIN_COOKIE}=made-up` }))), 'LOGIN_EXPIRED');
  });

  it('a login cookie alone is enough to read, never to change state', async () => {
    const { authentication, cookie, login } = await setup();
    for (const method of ['GET', 'HEAD', 'OPTIONS']) {
      assert.equal((await authentication.identify(request(method, { cookie }))).kind, 'console', method);
    }
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      assert.equal(await codeOf(() => authentication.identify(request(method, { cookie }))), 'CSRF_REJECTED', `${method} without the header`);
      assert.equal(await codeOf(() => authentication.identify(request(method, { cookie, 'x-airlock-csrf': `${login.csrfToken.slice(0, -1)}A` }))), 'CSRF_REJECTED', `${method} with a wrong header`);
      assert.equal(await codeOf(() => authentication.identify(request(method, { cookie, 'x-airlock-csrf': login.id }))), 'CSRF_REJECTED', `${method} with the cookie value as header`);
      assert.equal((await authentication.identify(request(method, { cookie, 'x-airlock-csrf': login.csrfToken }))).kind, 'console', `${method} with the header`);
    }
  });

  it("one login's CSRF token does not unlock another login", async () => {
    const { authentication, logins, cookie } = await setup();
    const other = logins.create(await authentication.grantOf(TOKEN));
    assert.equal(await codeOf(() => authentication.identify(request('POST', { cookie, 'x-airlock-csrf': other.csrfToken }))), 'CSRF_REJECTED');
  });

  it('a login expires after its lifetime, and log out ends it at once', async () => {
    let now = new Date('2030-01-01T00:00:00Z');
    const { authentication, logins, cookie, login } = await setup(() => now);
    now = new Date(now.getTime() + 59_000);
    assert.equal((await authentication.identify(request('GET', { cookie }))).kind, 'console');
    now = new Date(now.getTime() + 1_000);
    assert.equal(await codeOf(() => authentication.identify(request('GET', { cookie }))), 'LOGIN_EXPIRED');
    assert.equal(logins.find(login.id), undefined);

    const second = logins.create(await authentication.grantOf(TOKEN));
    assert.ok(logins.end(second.id));
    assert.equal(await codeOf(() => authentication.identify(request('GET', { cookie: `${LOGIN_COOKIE}=${second.id}` }))), 'LOGIN_EXPIRED');
    assert.equal(logins.end(second.id), false);
  });

  it('login ids and CSRF tokens are random and never the token', async () => {
    const { authentication, logins } = await setup();
    const seen = new Set<string>();
    for (let index = 0; index < 30; index += 1) {
      const login = logins.create(await authentication.grantOf(TOKEN));
      assert.ok(login.id.length >= 43 && login.csrfToken.length >= 43);
      assert.notEqual(login.id, TOKEN);
      assert.ok(!seen.has(login.id) && !seen.has(login.csrfToken));
      seen.add(login.id).add(login.csrfToken);
    }
    assert.equal(logins.endAllOf('admin'), 31);
    assert.equal(logins.size, 0);
  });

  it('a wrong token gets no login', async () => {
    const { authentication, logins } = await setup();
    assert.equal(await codeOf(() => authentication.grantOf('wrong')), 'UNAUTHORIZED');
    assert.equal(await codeOf(() => authentication.grantOf('')), 'UNAUTHORIZED');
    assert.equal(logins.size, 1, 'only the fixture login');
  });

  it('keeps at most 32 logins of one token, dropping that token’s oldest (issue 22: never another token’s)', async () => {
    const { authentication, logins, login } = await setup();
    for (let index = 0; index < 1000; index += 1) logins.create(await authentication.grantOf(TOKEN));
    assert.equal(logins.size, MAX_LOGINS_PER_TOKEN);
    assert.equal(logins.find(login.id), undefined, 'the oldest login went first');
  });

  it('records an approver as its identity: the kind, the name and the token id when it differs', async () => {
    const console: Identity = { kind: 'console', tokenId: 'admin', tenant: '*', role: 'admin', name: 'admin' };
    assert.equal(approverName(console), 'console:admin');
    assert.equal(approverName({ ...console, kind: 'token' }), 'token:admin');
    assert.equal(approverName({ kind: 'token', tokenId: 'tok_1', tenant: 'acme', role: 'approver', name: 'tok_1' }), 'token:tok_1');
    assert.equal(approverName({ kind: 'token', tokenId: 'tok_1', tenant: 'acme', role: 'approver', name: 'alice' }), 'token:alice (tok_1)');
  });

  it('reads one cookie out of a Cookie header', async () => {
    assert.equal(cookieValue('a=1; airlock_login=xyz; b=2', 'airlock_login'), 'xyz');
    assert.equal(cookieValue('xairlock_login=1', 'airlock_login'), undefined);
    assert.equal(cookieValue(undefined, 'airlock_login'), undefined);
    assert.equal(cookieValue('airlock_login=', 'airlock_login'), '');
  });
});

describe('the audit tap', () => {
  /** A real store and audit log; the tap hears through the store's change feed. */
  function bench() {
    const dir = mkdtempSync('/tmp/airlock-tap-');
    const store = new SqliteStore(join(dir, 'a.db'));
    const audit = new AuditLog({ key: randomBytes(32), clock: systemClock });
    return {
      store,
      audit,
      async close() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }

  it("reports a transaction's records once it commits, in chain order, also several of one transaction", async () => {
    const { store, audit, close } = bench();
    const heard: string[] = [];
    const untap = tapAuditAppends(store, (record) => heard.push(`${record.seq}:${record.type}`));
    try {
      await audit.appendNow(store, { sessionId: 's', type: 'a.alone', data: {} });
      await store.transaction(async (tx) => {
        await audit.append(tx, { sessionId: 's', type: 'b.inside', data: {} });
        await audit.append(tx, { sessionId: 's', type: 'c.inside', data: {} });
        assert.ok(!heard.some((entry) => entry.includes('inside')), 'nothing of this transaction before its commit');
      });
      await waitFor(() => heard.length === 3, 5_000, 'the records to be heard');
      assert.deepEqual(heard, ['1:a.alone', '2:b.inside', '3:c.inside']);
    } finally {
      untap();
      await close();
    }
  });

  it('never reports the records of a transaction that rolled back', async () => {
    const { store, audit, close } = bench();
    const heard: string[] = [];
    const untap = tapAuditAppends(store, (record) => heard.push(record.type));
    try {
      await assert.rejects(
        store.transaction(async (tx) => {
          await audit.append(tx, { sessionId: 's', type: 'x.lost', data: {} });
          throw new Error('boom');
        }),
      );
      await audit.appendNow(store, { sessionId: 's', type: 'z.kept', data: {} });
      await waitFor(() => heard.length === 1, 5_000, 'the kept record to be heard');
      assert.deepEqual(heard, ['z.kept']);
      assert.deepEqual((await store.listAudit('s')).map((record) => record.type), ['z.kept']);
    } finally {
      untap();
      await close();
    }
  });

  it('a failing listener never fails the write', async () => {
    const { store, audit, close } = bench();
    let calls = 0;
    const untap = tapAuditAppends(store, () => {
      calls += 1;
      throw new Error('listener broke');
    });
    try {
      const record = await audit.appendNow(store, { sessionId: 's', type: 'a.kept', data: {} });
      assert.equal(record.type, 'a.kept');
      await waitFor(() => calls === 1, 5_000, 'the listener to be called');
      assert.equal((await store.listAudit('s')).length, 1);
    } finally {
      untap();
      await close();
    }
  });
});

describe('issued tokens (airlock tokens create)', () => {
  async function bench() {
    const dir = mkdtempSync('/tmp/airlock-tokens-');
    const store = new SqliteStore(join(dir, 'a.db'));
    const audit = new AuditLog({ key: randomBytes(32), clock: systemClock });
    const tokens = new ApiTokens(store, audit, systemClock);
    const logins = new ConsoleLogins({ lifetimeSeconds: 60 });
    const authentication = new Authentication(installationTokens(TOKEN, tokens), logins);
    return {
      store,
      tokens,
      logins,
      authentication,
      async close() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }

  it('a made token authenticates as its tenant and role; only its hash is stored; the admin token stays admin', async () => {
    const { store, tokens, authentication, close } = await bench();
    try {
      const { token, secret } = await tokens.create({ tenant: 'acme', role: 'approver', name: 'alice' }, 'token:admin');
      assert.ok(secret.startsWith(TOKEN_SECRET_PREFIX) && secret.length > 40);
      const identity = await authentication.identify(request('GET', { authorization: `Bearer ${secret}` }));
      assert.deepEqual(identity, { kind: 'token', tokenId: token.id, tenant: 'acme', role: 'approver', name: 'alice' } satisfies Identity);
      const stored = await store.getToken(token.id);
      assert.equal(stored?.secretHash, secretHashOf(secret));
      assert.ok(!JSON.stringify(await store.listTokens()).includes(secret), 'the secret is nowhere in the store');
      assert.ok(!JSON.stringify(await store.listAudit('')).includes(secret), 'nor in the audit');
      assert.deepEqual(
        (await store.listAudit('')).map((record) => record.type),
        ['token.created'],
      );
      assert.equal((await authentication.identify(request('GET', { authorization: `Bearer ${TOKEN}` }))).role, 'admin');
      assert.equal(await codeOf(() => authentication.identify(request('GET', { authorization: `Bearer ${secret.slice(0, -1)}` }))), 'UNAUTHORIZED');
    } finally {
      await close();
    }
  });

  it('a revoked token answers UNAUTHORIZED at once, and its console logins end', async () => {
    const { tokens, logins, authentication, close } = await bench();
    try {
      const { token, secret } = await tokens.create({ tenant: 'acme', role: 'operator' }, 'token:admin');
      const login = logins.create(await authentication.grantOf(secret));
      const cookie = `${LOGIN_COOKIE}=${login.id}`;
      assert.equal((await authentication.identify(request('GET', { cookie }))).tokenId, token.id);
      const revoked = await tokens.revoke(token.id, 'token:admin');
      assert.equal(revoked.revoked, true);
      assert.equal(await codeOf(() => authentication.identify(request('GET', { authorization: `Bearer ${secret}` }))), 'UNAUTHORIZED');
      assert.equal(await codeOf(() => authentication.grantOf(secret)), 'UNAUTHORIZED');
      assert.equal(await codeOf(() => authentication.identify(request('GET', { cookie }))), 'LOGIN_EXPIRED');
      assert.equal(logins.size, 0);
      assert.equal(await codeOf(() => tokens.revoke(token.id, 'token:admin')), 'INVALID_STATE');
      assert.equal(await codeOf(() => tokens.revoke('tok_nothing', 'token:admin')), 'TOKEN_NOT_FOUND');
    } finally {
      await close();
    }
  });

  it('refuses a bad tenant name or role, and stores nothing', async () => {
    const { store, tokens, close } = await bench();
    try {
      assert.equal(await codeOf(() => tokens.create({ tenant: '../etc' }, 'token:admin')), 'INVALID_ARGUMENTS');
      assert.equal(await codeOf(() => tokens.create({ tenant: '*' }, 'token:admin')), 'INVALID_ARGUMENTS');
      assert.equal(await codeOf(() => tokens.create({ tenant: 'acme', role: 'root' as never }, 'token:admin')), 'INVALID_ARGUMENTS');
      assert.deepEqual(await store.listTokens(), []);
    } finally {
      await close();
    }
  });

  it('lists tokens without secrets or hashes, and records the last use', async () => {
    const { tokens, authentication, close } = await bench();
    try {
      const { secret } = await tokens.create({ tenant: 'acme' }, 'token:admin');
      await authentication.identify(request('GET', { authorization: `Bearer ${secret}` }));
      await waitFor(async () => (await tokens.list())[0]?.lastUsedAt !== null, 5_000, 'the last use to be recorded');
      const [listed] = await tokens.list();
      assert.deepEqual(Object.keys(listed ?? {}).sort(), ['createdAt', 'id', 'lastUsedAt', 'name', 'revoked', 'revokedAt', 'role', 'tenant']);
      assert.equal(listed?.role, 'operator', 'the default role');
    } finally {
      await close();
    }
  });
});
