import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Authentication, approverName, cookieValue, installationTokens, LOGIN_COOKIE, type CredentialCarrier, type Identity } from '../../../src/api/authentication.js';
import { ConsoleLogins } from '../../../src/api/console-logins.js';
import { isAirlockError } from '../../../src/core/errors.js';
import { tapAuditAppends } from '../../../src/api/audit-tap.js';
import type { Store } from '../../../src/core/store.js';
import type { AuditRecord } from '../../../src/audit/audit-record.js';

const TOKEN = 'installation-token-0123456789';

function request(method: string, headers: Record<string, string>): CredentialCarrier {
  return { method, headers } as CredentialCarrier;
}

function codeOf(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    assert.ok(isAirlockError(error), `expected an AirlockError, got ${String(error)}`);
    return error.code;
  }
  return 'NO ERROR';
}

function setup(now: () => Date = () => new Date()) {
  const logins = new ConsoleLogins({ lifetimeSeconds: 60, now });
  const authentication = new Authentication(installationTokens(TOKEN), logins);
  const login = logins.create(authentication.grantOf(TOKEN));
  const cookie = `theme=dark; ${LOGIN_COOKIE}=${login.id}`;
  return { logins, authentication, login, cookie };
}

describe('authentication: a request becomes an identity', () => {
  it('the installation token is the admin of every tenant; a wrong or truncated token is not', () => {
    const tokens = installationTokens(TOKEN);
    assert.deepEqual(tokens.find(TOKEN), { tokenId: 'admin', tenant: '*', role: 'admin', name: 'admin' });
    assert.equal(tokens.find(TOKEN.slice(0, -1)), undefined);
    assert.equal(tokens.find(`${TOKEN}x`), undefined);
    assert.equal(tokens.find(''), undefined);
  });

  it('a bearer token gives a token identity, unchanged by any cookie', () => {
    const { authentication, cookie } = setup();
    const identity = authentication.identify(request('POST', { authorization: `Bearer ${TOKEN}`, cookie }));
    assert.deepEqual(identity, { kind: 'token', tokenId: 'admin', tenant: '*', role: 'admin', name: 'admin' } satisfies Identity);
  });

  it('a wrong bearer token is refused even beside a valid login cookie', () => {
    const { authentication, cookie } = setup();
    assert.equal(codeOf(() => authentication.identify(request('GET', { authorization: 'Bearer nope', cookie }))), 'UNAUTHORIZED');
    assert.equal(codeOf(() => authentication.identify(request('GET', { authorization: TOKEN }))), 'UNAUTHORIZED', 'no Bearer prefix');
  });

  it('no credential at all is UNAUTHORIZED; a cookie of no live login is LOGIN_EXPIRED', () => {
    const { authentication } = setup();
    assert.equal(codeOf(() => authentication.identify(request('GET', {}))), 'UNAUTHORIZED');
    assert.equal(codeOf(() => authentication.identify(request('GET', { cookie: 'other=1' }))), 'UNAUTHORIZED');
    assert.equal(codeOf(() => authentication.identify(request('GET', { cookie: `${LOGIN_COOKIE}=made-up` }))), 'LOGIN_EXPIRED');
  });

  it('a login cookie alone is enough to read, never to change state', () => {
    const { authentication, cookie, login } = setup();
    for (const method of ['GET', 'HEAD', 'OPTIONS']) {
      assert.equal(authentication.identify(request(method, { cookie })).kind, 'console', method);
    }
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      assert.equal(codeOf(() => authentication.identify(request(method, { cookie }))), 'CSRF_REJECTED', `${method} without the header`);
      assert.equal(codeOf(() => authentication.identify(request(method, { cookie, 'x-airlock-csrf': `${login.csrfToken.slice(0, -1)}A` }))), 'CSRF_REJECTED', `${method} with a wrong header`);
      assert.equal(codeOf(() => authentication.identify(request(method, { cookie, 'x-airlock-csrf': login.id }))), 'CSRF_REJECTED', `${method} with the cookie value as header`);
      assert.equal(authentication.identify(request(method, { cookie, 'x-airlock-csrf': login.csrfToken })).kind, 'console', `${method} with the header`);
    }
  });

  it("one login's CSRF token does not unlock another login", () => {
    const { authentication, logins, cookie } = setup();
    const other = logins.create(authentication.grantOf(TOKEN));
    assert.equal(codeOf(() => authentication.identify(request('POST', { cookie, 'x-airlock-csrf': other.csrfToken }))), 'CSRF_REJECTED');
  });

  it('a login expires after its lifetime, and log out ends it at once', () => {
    let now = new Date('2030-01-01T00:00:00Z');
    const { authentication, logins, cookie, login } = setup(() => now);
    now = new Date(now.getTime() + 59_000);
    assert.equal(authentication.identify(request('GET', { cookie })).kind, 'console');
    now = new Date(now.getTime() + 1_000);
    assert.equal(codeOf(() => authentication.identify(request('GET', { cookie }))), 'LOGIN_EXPIRED');
    assert.equal(logins.find(login.id), undefined);

    const second = logins.create(authentication.grantOf(TOKEN));
    assert.ok(logins.end(second.id));
    assert.equal(codeOf(() => authentication.identify(request('GET', { cookie: `${LOGIN_COOKIE}=${second.id}` }))), 'LOGIN_EXPIRED');
    assert.equal(logins.end(second.id), false);
  });

  it('login ids and CSRF tokens are random and never the token', () => {
    const { authentication, logins } = setup();
    const seen = new Set<string>();
    for (let index = 0; index < 50; index += 1) {
      const login = logins.create(authentication.grantOf(TOKEN));
      assert.ok(login.id.length >= 43 && login.csrfToken.length >= 43);
      assert.notEqual(login.id, TOKEN);
      assert.ok(!seen.has(login.id) && !seen.has(login.csrfToken));
      seen.add(login.id).add(login.csrfToken);
    }
    assert.equal(logins.endAllOf('admin'), 51);
    assert.equal(logins.size, 0);
  });

  it('a wrong token gets no login', () => {
    const { authentication, logins } = setup();
    assert.equal(codeOf(() => authentication.grantOf('wrong')), 'UNAUTHORIZED');
    assert.equal(codeOf(() => authentication.grantOf('')), 'UNAUTHORIZED');
    assert.equal(logins.size, 1, 'only the fixture login');
  });

  it('keeps at most 1000 logins, dropping the oldest', () => {
    const { authentication, logins, login } = setup();
    for (let index = 0; index < 1000; index += 1) logins.create(authentication.grantOf(TOKEN));
    assert.equal(logins.size, 1000);
    assert.equal(logins.find(login.id), undefined, 'the oldest login went first');
  });

  it('records a console approver as its identity, whatever the body claims; bearer callers may label themselves', () => {
    const console: Identity = { kind: 'console', tokenId: 'admin', tenant: '*', role: 'admin', name: 'admin' };
    const token: Identity = { ...console, kind: 'token' };
    assert.equal(approverName(console, 'someone-else'), 'console:admin');
    assert.equal(approverName(console, undefined), 'console:admin');
    assert.equal(approverName(token, 'mcp:claude-code'), 'mcp:claude-code');
    assert.equal(approverName(token, undefined), 'token:admin');
  });

  it('reads one cookie out of a Cookie header', () => {
    assert.equal(cookieValue('a=1; airlock_login=xyz; b=2', 'airlock_login'), 'xyz');
    assert.equal(cookieValue('xairlock_login=1', 'airlock_login'), undefined);
    assert.equal(cookieValue(undefined, 'airlock_login'), undefined);
    assert.equal(cookieValue('airlock_login=', 'airlock_login'), '');
  });
});

describe('the audit tap', () => {
  /** A store double with a transaction that really rolls back (discards) appends. */
  function fakeStore(): Store & { committed: AuditRecord[] } {
    const pending: AuditRecord[][] = [];
    const committed: AuditRecord[] = [];
    let seq = 0;
    const store = {
      committed,
      transaction<T>(work: () => T): T {
        pending.push([]);
        try {
          const result = work();
          const mine = pending.pop() ?? [];
          (pending[pending.length - 1] ?? committed).push(...mine);
          return result;
        } catch (error) {
          pending.pop();
          throw error;
        }
      },
      appendAudit(entry: { sessionId: string; type: string; data: Record<string, unknown> }): AuditRecord {
        seq += 1;
        const record: AuditRecord = { ...entry, seq, at: new Date().toISOString(), prevHash: '', hash: String(seq) };
        (pending[pending.length - 1] ?? committed).push(record);
        return record;
      },
      listSessions: () => [],
    };
    return store as unknown as Store & { committed: AuditRecord[] };
  }

  it('reports a record appended outside a transaction at once, and a transaction\'s records only when it commits', () => {
    const store = fakeStore();
    const heard: string[] = [];
    const tapped = tapAuditAppends(store, (record) => heard.push(record.type));
    tapped.appendAudit({ sessionId: 's', type: 'a.alone', data: {} });
    assert.deepEqual(heard, ['a.alone']);
    tapped.transaction(() => {
      tapped.appendAudit({ sessionId: 's', type: 'b.inside', data: {} });
      assert.deepEqual(heard, ['a.alone'], 'not before the commit');
      tapped.transaction(() => tapped.appendAudit({ sessionId: 's', type: 'c.nested', data: {} }));
      assert.deepEqual(heard, ['a.alone'], 'a nested commit waits for the outer one');
    });
    assert.deepEqual(heard, ['a.alone', 'b.inside', 'c.nested']);
  });

  it('never reports the records of a transaction that rolled back', () => {
    const store = fakeStore();
    const heard: string[] = [];
    const tapped = tapAuditAppends(store, (record) => heard.push(record.type));
    assert.throws(() =>
      tapped.transaction(() => {
        tapped.appendAudit({ sessionId: 's', type: 'x.lost', data: {} });
        throw new Error('boom');
      }),
    );
    tapped.transaction(() => {
      try {
        tapped.transaction(() => {
          tapped.appendAudit({ sessionId: 's', type: 'y.inner-lost', data: {} });
          throw new Error('inner');
        });
      } catch {
        // the outer transaction goes on
      }
      tapped.appendAudit({ sessionId: 's', type: 'z.kept', data: {} });
    });
    assert.deepEqual(heard, ['z.kept']);
    assert.deepEqual(store.committed.map((record) => record.type), ['z.kept']);
  });

  it('passes every other method through, and a failing listener never fails the write', () => {
    const store = fakeStore();
    const tapped = tapAuditAppends(store, () => {
      throw new Error('listener broke');
    });
    assert.deepEqual(tapped.listSessions(), []);
    const record = tapped.appendAudit({ sessionId: 's', type: 'a.kept', data: {} });
    assert.equal(record.type, 'a.kept');
    assert.equal(store.committed.length, 1);
  });
});
