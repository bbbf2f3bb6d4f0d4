/**
 * E2B keys (issue 23, item 4): `e2b_` + 40 hex digits, the same token as an
 * Airlock one (role, tenant, revocation); accepted in `X-API-Key` /
 * `X-Access-Token` on the E2B API's paths only; and the small parsers of the
 * E2B API (metadata filters, error shape, states).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Authentication, installationTokens, type CredentialCarrier } from '../../../../src/api/authentication.js';
import { ConsoleLogins } from '../../../../src/api/console-logins.js';
import { ApiTokens, E2B_KEY_PATTERN } from '../../../../src/core/api-tokens.js';
import { SqliteStore } from '../../../../src/stores/sqlite/sqlite-store.js';
import { AuditLog } from '../../../../src/audit/audit-log.js';
import { systemClock } from '../../../../src/core/clock.js';
import { isAirlockError } from '../../../../src/core/errors.js';
import { e2bErrorBody, e2bState, isE2bUrl, parseMetadataFilter } from '../../../../src/api/e2b/e2b-sandboxes.js';

async function withTokens<T>(work: (tokens: ApiTokens, authentication: Authentication) => Promise<T>): Promise<T> {
  const dir = mkdtempSync('/tmp/airlock-e2b-keys-');
  const store = new SqliteStore(join(dir, 'a.db'));
  try {
    const tokens = new ApiTokens(store, new AuditLog({ key: randomBytes(32), clock: systemClock }), systemClock);
    return await work(tokens, new Authentication(installationTokens('installation-token-0123456789', tokens), new ConsoleLogins()));
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function request(url: string, headers: Record<string, string>): CredentialCarrier {
  return { method: 'POST', url, headers } as CredentialCarrier;
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

describe('E2B keys are Airlock tokens in E2B form', () => {
  it('makes `e2b_` + 40 hex digits with --e2b, and the token of the same tenant and role', async () => {
    await withTokens(async (tokens) => {
      const { token, secret } = await tokens.create({ tenant: 'acme', role: 'agent', name: 'bot', e2b: true }, 'test');
      assert.match(secret, E2B_KEY_PATTERN);
      const found = await tokens.find(secret);
      assert.equal(found?.id, token.id);
      assert.equal(found?.tenant, 'acme');
      assert.equal(found?.role, 'agent');
      const plain = await tokens.create({ tenant: 'acme' }, 'test');
      assert.match(plain.secret, /^airlock_/);
    });
  });

  it('accepts the key in X-API-Key and X-Access-Token on /e2b paths only; a revoked or malformed key is refused', async () => {
    await withTokens(async (tokens, authentication) => {
      const { token, secret } = await tokens.create({ tenant: 'acme', role: 'operator', e2b: true }, 'test');
      assert.equal((await authentication.identify(request('/e2b/v2/sandboxes', { 'x-api-key': secret }))).tokenId, token.id);
      assert.equal((await authentication.identify(request('/e2b/process.Process/Start', { 'x-access-token': secret }))).tokenId, token.id);
      // Elsewhere only a bearer header counts.
      assert.equal(await codeOf(() => authentication.identify(request('/v1/sessions', { 'x-api-key': secret }))), 'UNAUTHORIZED');
      assert.equal((await authentication.identify(request('/v1/sessions', { authorization: `Bearer ${secret}` }))).tokenId, token.id);
      for (const malformed of ['e2b_', 'e2b_XYZ', `${secret}0`, secret.toUpperCase(), secret.slice(0, -1), '']) {
        assert.equal(await codeOf(() => authentication.identify(request('/e2b/v2/sandboxes', { 'x-api-key': malformed }))), 'UNAUTHORIZED', malformed);
      }
      await tokens.revoke(token.id, 'test');
      assert.equal(await codeOf(() => authentication.identify(request('/e2b/v2/sandboxes', { 'x-api-key': secret }))), 'UNAUTHORIZED');
    });
  });
});

describe('the E2B API vocabulary', () => {
  it("parses metadata filters as E2B's SDK encodes them", () => {
    assert.deepEqual(parseMetadataFilter(undefined), {});
    assert.deepEqual(parseMetadataFilter(''), {});
    assert.deepEqual(parseMetadataFilter('suite=e2b&run=1'), { suite: 'e2b', run: '1' });
    const encoded = new URLSearchParams({ [encodeURIComponent('a b')]: encodeURIComponent('x&y=z') }).toString();
    assert.deepEqual(parseMetadataFilter(encoded), { 'a b': 'x&y=z' });
  });

  it("answers E2B's error shape, maps states, and knows its paths exactly", () => {
    assert.deepEqual(e2bErrorBody(404, 'sandbox x not found'), { code: 404, message: 'sandbox x not found' });
    assert.equal(e2bState('running'), 'running');
    assert.equal(e2bState('suspended'), 'paused');
    assert.equal(e2bState('paused'), 'paused');
    assert.equal(isE2bUrl('/e2b/sandboxes'), true);
    assert.equal(isE2bUrl('/e2bx/sandboxes'), false);
    assert.equal(isE2bUrl('/v1/e2b/templates'), false);
  });
});
