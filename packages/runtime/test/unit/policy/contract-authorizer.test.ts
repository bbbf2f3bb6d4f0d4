import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ContractAuthorizer } from '../../../src/policy/contract-authorizer.js';
import { parseContract } from '../../../src/policy/session-contract.js';
import { NO_DESKTOP_CONTEXT, type AuthorizationContext } from '../../../src/core/authorizer.js';
import type { SessionRecord } from '../../../src/core/session.js';

let sessions = 0;
function sessionWith(contract: Record<string, unknown>): SessionRecord {
  sessions += 1;
  return { id: `ses_${sessions}`, contractVersion: 1, contract: parseContract({ version: 1, ...contract }) } as unknown as SessionRecord;
}

function call(tool: AuthorizationContext['tool'], extra: Partial<AuthorizationContext> = {}): AuthorizationContext {
  return { tool, command: '', programs: [], argv: [], analysable: true, analysisNotes: [], path: '', cwd: '', tenant: 'default', callCount: 0, identicalFailures: 0, branches: 0, access: 'none', env: {}, desktop: NO_DESKTOP_CONTEXT, ...extra };
}

test('a tool missing from the contract is denied before any policy, naming the tools it has', () => {
  const authorizer = new ContractAuthorizer();
  const session = sessionWith({ tools: ['exec', 'files.read'] });
  for (const tool of ['fork', 'snapshot'] as const) {
    const decision = authorizer.authorize(session, call(tool, { branches: tool === 'fork' ? 1 : 0 }));
    assert.equal(decision.decision, 'deny');
    assert.deepEqual(decision.policyIds, ['contract.tools']);
    assert.equal(decision.reason, `the tool ${tool} is not in this session's contract (tools: exec, files.read)`);
  }
  assert.equal(authorizer.authorize(session, call('exec', { command: 'ls', programs: ['ls'] })).decision, 'allow');
});

test('a contract without a tools list allows snapshot and fork, subject to its policies', () => {
  const authorizer = new ContractAuthorizer();
  const open = sessionWith({});
  assert.equal(authorizer.authorize(open, call('snapshot')).decision, 'allow');
  assert.equal(authorizer.authorize(open, call('fork', { branches: 8 })).decision, 'allow');
  const bounded = sessionWith({ policies: ['permit(principal, action, resource) unless { action == Airlock::Action::"fork" && context.branches > 2 };'] });
  assert.equal(authorizer.authorize(bounded, call('fork', { branches: 2 })).decision, 'allow');
  assert.equal(authorizer.authorize(bounded, call('fork', { branches: 3 })).decision, 'deny');
});

test('filesystem rules never apply to the lineage tools, which have no path', () => {
  const authorizer = new ContractAuthorizer();
  const session = sessionWith({ filesystem: { allowWrite: [] } });
  assert.equal(authorizer.authorize(session, call('snapshot')).decision, 'allow');
  assert.equal(authorizer.authorize(session, call('files.write', { path: '/workspace/a', access: 'write' })).decision, 'deny');
});

test('an exec that sets a variable changing which code runs is refused unless the contract allows it by name', () => {
  const authorizer = new ContractAuthorizer();
  const strict = sessionWith({});
  for (const name of ['BASH_ENV', 'ENV', 'LD_PRELOAD', 'LD_LIBRARY_PATH', 'PATH', 'PYTHONSTARTUP', 'BASH_FUNC_ls%%', 'NODE_OPTIONS']) {
    const decision = authorizer.authorize(strict, call('exec', { command: 'cat f', programs: ['cat'], env: { [name]: '/workspace/evil' } }));
    assert.equal(decision.decision, 'deny', name);
    assert.deepEqual(decision.policyIds, ['contract.exec.allowEnv']);
    assert.match(decision.reason, new RegExp(`${name.replace(/[%$]/g, '.')}.*exec\\.allowEnv`));
  }
  assert.equal(authorizer.authorize(strict, call('exec', { command: 'cat f', programs: ['cat'], env: { GREETING: 'hi' } })).decision, 'allow');
  const allowing = sessionWith({ exec: { allowEnv: ['PATH'] } });
  assert.equal(authorizer.authorize(allowing, call('exec', { command: 'ls', programs: ['ls'], env: { PATH: '/usr/bin' } })).decision, 'allow');
  assert.equal(authorizer.authorize(allowing, call('exec', { command: 'ls', programs: ['ls'], env: { PATH: '/usr/bin', LD_PRELOAD: 'x' } })).decision, 'deny');
});

test('Cedar policies see the environment of an exec as context.env, read with hasTag and getTag', () => {
  const authorizer = new ContractAuthorizer();
  const session = sessionWith({
    exec: { allowEnv: ['PATH'] },
    policies: [
      'permit(principal, action, resource);',
      '@id("no-odd-path") forbid(principal, action == Airlock::Action::"exec", resource) when { context.env.hasTag("PATH") && !(context.env.getTag("PATH") like "/usr/*") };',
      '@id("no-debug") forbid(principal, action, resource) when { context.env.hasTag("DEBUG") };',
    ],
  });
  assert.equal(authorizer.authorize(session, call('exec', { command: 'ls', programs: ['ls'], env: { PATH: '/usr/bin:/bin' } })).decision, 'allow');
  const odd = authorizer.authorize(session, call('exec', { command: 'ls', programs: ['ls'], env: { PATH: '/workspace/bin:/usr/bin' } }));
  assert.equal(odd.decision, 'deny');
  assert.deepEqual(odd.policyIds, ['no-odd-path']);
  assert.deepEqual(authorizer.authorize(session, call('exec', { command: 'ls', programs: ['ls'], env: { DEBUG: '1' } })).policyIds, ['no-debug']);
  assert.equal(authorizer.authorize(session, call('files.read', { path: '/workspace/a', access: 'read' })).decision, 'allow');
});
