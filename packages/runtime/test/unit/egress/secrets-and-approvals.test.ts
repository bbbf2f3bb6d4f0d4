import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SecretStore } from '../../../src/secrets/secret-store.js';
import { SqliteStore } from '../../../src/stores/sqlite/sqlite-store.js';
import { AuditLog } from '../../../src/audit/audit-log.js';
import { systemClock } from '../../../src/core/clock.js';
import { randomBytes } from 'node:crypto';
import { waitFor } from '../../support/wait-for.js';
import { ApprovalService } from '../../../src/core/approval-service.js';
import { ConnectionApprovals } from '../../../src/core/connection-approvals.js';
import { CedarPolicySet } from '../../../src/policy/cedar-authorizer.js';
import { parseContract } from '../../../src/policy/session-contract.js';

test('secrets are encrypted at rest, listed without values, bound to their name, and removable', () => {
  const dir = mkdtempSync('/var/tmp/airlock-secrets-test-');
  try {
    const store = new SecretStore({ dir: join(dir, 'secrets'), keyFile: join(dir, 'secrets.key') });
    store.set('GITHUB_TOKEN', 'ghp_supersecretvalue');
    store.set('OTHER', 'another-value');
    assert.equal(store.get('GITHUB_TOKEN'), 'ghp_supersecretvalue');
    assert.deepEqual(store.list().map((info) => info.name), ['GITHUB_TOKEN', 'OTHER']);
    assert.doesNotMatch(JSON.stringify(store.list()), /supersecret/);
    assert.doesNotMatch(readFileSync(join(dir, 'secrets', 'GITHUB_TOKEN.json'), 'utf8'), /supersecret/);
    assert.equal(statSync(join(dir, 'secrets.key')).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir, 'secrets', 'GITHUB_TOKEN.json')).mode & 0o777, 0o600);
    assert.throws(() => store.set('bad name', 'x'), /invalid secret name/);
    assert.throws(() => store.set('NL', 'a\nb'), /line break/);
    // A file moved to another name does not decrypt (the name is authenticated).
    rmSync(join(dir, 'secrets', 'OTHER.json'));
    renameSync(join(dir, 'secrets', 'GITHUB_TOKEN.json'), join(dir, 'secrets', 'OTHER.json'));
    assert.throws(() => store.get('OTHER'), /does not decrypt/);
    assert.equal(store.remove('OTHER'), true);
    assert.equal(store.remove('OTHER'), false);
    assert.equal(store.get('OTHER'), undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a secret given to some tenants serves only their sessions; left out on replace, its tenants stay', () => {
  const dir = mkdtempSync('/var/tmp/airlock-secrets-test-');
  try {
    const store = new SecretStore({ dir: join(dir, 'secrets'), keyFile: join(dir, 'secrets.key') });
    assert.equal(store.set('EVERYONE', 'v').tenants, null);
    assert.equal(store.givenTo('EVERYONE', 'acme'), true);
    assert.deepEqual(store.set('GLOBEX_ONLY', 'v', ['globex', 'globex']).tenants, ['globex']);
    assert.equal(store.givenTo('GLOBEX_ONLY', 'globex'), true);
    assert.equal(store.givenTo('GLOBEX_ONLY', 'acme'), false);
    assert.equal(store.givenTo('MISSING', 'acme'), false);
    assert.deepEqual(store.set('GLOBEX_ONLY', 'rotated').tenants, ['globex'], 'a rotation keeps the tenants');
    assert.equal(store.set('GLOBEX_ONLY', 'rotated', null).tenants, null);
    assert.equal(store.givenTo('GLOBEX_ONLY', 'acme'), true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const ASK_FIRST = parseContract({
  version: 1,
  network: { allowedDomains: ['*.example.com'] },
  policies: [
    'permit(principal, action, resource) when { context.tool != "net.connect" };',
    '@approval("required")\npermit(principal, action == Airlock::Action::"net.connect", resource) when { context.port == 443 };',
    'forbid(principal, action == Airlock::Action::"net.connect", resource) when { context.host like "*.evil.example.com" };',
  ],
});

test('Cedar decides connections by host and port; tool calls still see host "" and port 0', () => {
  const cedar = new CedarPolicySet(ASK_FIRST);
  assert.equal(cedar.authorizeConnection({ sessionId: 'ses_1', host: 'api.example.com', port: 443 }).decision, 'ask');
  assert.equal(cedar.authorizeConnection({ sessionId: 'ses_1', host: 'api.example.com', port: 80 }).decision, 'deny');
  const forbidden = cedar.authorizeConnection({ sessionId: 'ses_1', host: 'x.evil.example.com', port: 443 });
  assert.equal(forbidden.decision, 'deny');
  assert.match(forbidden.reason, /connection to x\.evil\.example\.com:443/);
  assert.equal(cedar.authorize({ sessionId: 'ses_1', tool: 'exec', command: 'ls' }).decision, 'allow');
});

test('a connection waits for a human; the approval then covers host:port for the session', async () => {
  const dir = mkdtempSync('/var/tmp/airlock-conn-approval-test-');
  const store = new SqliteStore(join(dir, 'a.db'));
  try {
    const approvals = new ApprovalService({ store, audit: new AuditLog({ key: randomBytes(32), clock: systemClock }), isManagedHere: async () => true });
    const waiting = new ConnectionApprovals(approvals, 10_000);
    const decision = new CedarPolicySet(ASK_FIRST).authorizeConnection({ sessionId: 'ses_1', host: 'api.example.com', port: 443 });
    const pending = waiting.resolve('ses_1', 'api.example.com', 443, decision);
    await waitFor(async () => (await approvals.list({ sessionId: 'ses_1', pendingOnly: true })).length > 0, 10_000, 'the connection to be held');
    const [approval] = await approvals.list({ sessionId: 'ses_1', pendingOnly: true });
    assert.ok(approval);
    assert.equal(approval.call.tool, 'net.connect');
    await approvals.decide(approval.id, 'approve', 'tester', null);
    assert.equal((await pending).allowed, true);
    assert.equal((await waiting.resolve('ses_1', 'api.example.com', 443, decision)).allowed, true, 'no second question');
    assert.equal((await approvals.list({ sessionId: 'ses_1', pendingOnly: true })).length, 0);

    const quick = new ConnectionApprovals(approvals, 200);
    const timedOut = await quick.resolve('ses_1', 'other.example.com', 443, decision);
    assert.equal(timedOut.allowed, false);
    assert.match(timedOut.reason, /approve it .*and retry/);
    await approvals.close();
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
