import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CedarPolicySet, type AuthorizationRequest } from '../../../src/policy/cedar-authorizer.js';
import { parseContract } from '../../../src/policy/session-contract.js';
import { isAirlockError } from '../../../src/core/errors.js';
import type { SessionContract } from '../../../src/policy/session-contract.js';
import { EXAMPLE_CONTRACT } from './example-contract.js';

const example = new CedarPolicySet(parseContract(EXAMPLE_CONTRACT));

function exec(command: string, extra: Partial<AuthorizationRequest> = {}): AuthorizationRequest {
  return { sessionId: 'ses_1', tool: 'exec', command, ...extra };
}

function withPolicies(policies: unknown[], extra: Record<string, unknown> = {}): CedarPolicySet {
  return new CedarPolicySet(parseContract({ version: 1, identity: { tenant: 'acme', principal: 'agent-7' }, policies, ...extra }));
}

test('the example contract allows a plain command by the permit-all policy', () => {
  assert.deepEqual(example.authorize(exec('ls -la /workspace')), {
    decision: 'allow',
    policyIds: ['policy0'],
    reason: 'policy policy0 permits exec: command runs ls',
    errors: [],
    enforced: true,
  });
});

test('the example contract denies rm by policy1 and says why', () => {
  const decision = example.authorize(exec('sh -c "ls && rm -rf /workspace"'));
  assert.equal(decision.decision, 'deny');
  assert.deepEqual(decision.policyIds, ['policy1']);
  assert.equal(decision.reason, 'policy policy1 forbids exec: command runs rm');
});

test('the example contract asks for approval of tar by policy2', () => {
  const decision = example.authorize(exec('tar czf a.tgz x'));
  assert.equal(decision.decision, 'ask');
  assert.deepEqual(decision.policyIds, ['policy2']);
  assert.equal(decision.reason, 'policy policy2 requires approval for exec: command runs tar');
});

test('a forbid beats an approval permit', () => {
  const decision = example.authorize(exec('tar czf a.tgz x && rm -rf x'));
  assert.equal(decision.decision, 'deny');
  assert.deepEqual(decision.policyIds, ['policy1']);
});

test('rm hidden in substitutions, wrappers and quotes is still denied', () => {
  for (const command of ['echo $(rm x)', 'find . -exec rm {} \\;', 'env FOO=1 rm x', 'xargs rm', '"r""m" x', '/bin/rm x']) {
    assert.equal(example.authorize(exec(command)).decision, 'deny', command);
  }
});

test('argv requests are analysed too, and their context command is empty', () => {
  assert.equal(example.authorize({ sessionId: 's', tool: 'exec', argv: ['sh', '-c', 'rm -rf /'] }).decision, 'deny');
  const set = withPolicies(['permit(principal, action, resource) when { context.command == "" && context.argv.contains("-la") };']);
  assert.equal(set.authorize({ sessionId: 's', tool: 'exec', argv: ['ls', '-la'], command: 'ignored' }).decision, 'allow');
});

test('file tools are decided on their path; the example allows them', () => {
  const decision = example.authorize({ sessionId: 's', tool: 'files.write', path: '/workspace/a.txt' });
  assert.equal(decision.decision, 'allow');
  assert.equal(decision.reason, 'policy policy0 permits files.write: path /workspace/a.txt');
});

test('nothing matching is a deny that names no policy', () => {
  const set = withPolicies(['permit(principal, action == Airlock::Action::"exec", resource);']);
  assert.deepEqual(set.authorize({ sessionId: 's', tool: 'files.read', path: '/etc/passwd' }), {
    decision: 'deny',
    policyIds: [],
    reason: 'no policy permits files.read: path /etc/passwd',
    errors: [],
    enforced: true,
  });
  const none = withPolicies([]);
  assert.equal(none.authorize(exec('ls')).reason, 'no policy permits exec: command runs ls');
});

test('an evaluation error denies (fail closed) and records the error', () => {
  const set = withPolicies([
    'permit(principal, action, resource);',
    'forbid(principal, action, resource) when { context.callCount + 9223372036854775000 > 9223372036854775806 };',
  ]);
  assert.equal(set.authorize(exec('ls', { callCount: 10 })).decision, 'allow');
  const decision = set.authorize(exec('ls', { callCount: 1000 }));
  assert.equal(decision.decision, 'deny');
  assert.deepEqual(decision.policyIds, ['policy1']);
  assert.equal(decision.errors.length, 1);
  assert.match(decision.errors[0] ?? '', /^policy1: integer overflow/);
  assert.match(decision.reason, /policy evaluation failed .*fail closed/);
});

test('an erroring permit also denies, even when another permit matches', () => {
  const set = withPolicies([
    'permit(principal, action, resource);',
    '@approval("required") permit(principal, action, resource) when { context.callCount * 9223372036854775807 > 0 };',
  ]);
  assert.equal(set.authorize(exec('ls', { callCount: 3 })).decision, 'deny');
});

test('a bad request denies with the error: unknown tool, non-canonical path, non-integer counter', () => {
  const unknownTool = example.authorize({ sessionId: 's', tool: 'files.chmod' as 'files.read' });
  assert.equal(unknownTool.decision, 'deny');
  assert.match(unknownTool.errors[0] ?? '', /unknown tool/);
  const path = example.authorize({ sessionId: 's', tool: 'files.read', path: '/workspace/../etc/passwd' });
  assert.equal(path.decision, 'deny');
  assert.match(path.reason, /not canonical/);
  for (const callCount of [1.5, -1, Number.NaN, 2 ** 60]) {
    assert.equal(example.authorize(exec('ls', { callCount })).decision, 'deny', String(callCount));
  }
});

test('log-only mode computes the same decision but does not enforce it', () => {
  const logOnly = new CedarPolicySet(parseContract({ ...EXAMPLE_CONTRACT, enforcement: 'log-only' }));
  for (const command of ['ls', 'rm x', 'tar cf a x']) {
    const enforced = example.authorize(exec(command));
    const recorded = logOnly.authorize(exec(command));
    assert.deepEqual(recorded, { ...enforced, enforced: false }, command);
  }
});

test('@reason overrides the generated sentence', () => {
  const set = withPolicies([
    'permit(principal, action, resource);',
    '@reason("stop: the same call failed 5 times in a row; change approach") forbid(principal, action, resource) when { context.identicalFailures >= 5 };',
  ]);
  assert.equal(set.authorize(exec('make test', { identicalFailures: 5 })).reason, 'stop: the same call failed 5 times in a row; change approach');
  assert.equal(set.authorize(exec('make test', { identicalFailures: 4 })).decision, 'allow');
});

test('ids given in the contract are the ids returned; all matching permits are listed', () => {
  const set = withPolicies([
    { id: 'workspace-files', text: 'permit(principal, action, resource) when { context.path like "/workspace/*" };' },
    { id: 'anything', text: 'permit(principal, action, resource);' },
    { id: 'no-secrets', text: 'forbid(principal, action, resource) when { context.path like "/workspace/secret*" };' },
  ]);
  assert.deepEqual(set.policyIds, ['workspace-files', 'anything', 'no-secrets']);
  const allowed = set.authorize({ sessionId: 's', tool: 'files.read', path: '/workspace/a' });
  assert.deepEqual([...allowed.policyIds].sort(), ['anything', 'workspace-files']);
  assert.match(allowed.reason, /^policies .* permit files\.read: path \/workspace\/a$/);
  assert.deepEqual(set.authorize({ sessionId: 's', tool: 'files.read', path: '/workspace/secret/k' }).policyIds, ['no-secrets']);
});

test('principal, resource, tenant and the analysable flag are in the request', () => {
  const set = withPolicies([
    'permit(principal == Airlock::Agent::"agent-7", action, resource == Airlock::Session::"ses_1") when { context.tenant == "acme" };',
    '@approval("required") permit(principal, action == Airlock::Action::"exec", resource) unless { context.analysable };',
  ]);
  assert.equal(set.authorize(exec('ls')).decision, 'allow');
  assert.equal(set.authorize({ ...exec('ls'), sessionId: 'ses_2' }).decision, 'deny');
  const dynamic = set.authorize(exec('eval "$CMD"'));
  assert.equal(dynamic.decision, 'ask');
  assert.match(dynamic.reason, /could not be analysed statically \(eval runs a string/);
});

test('a precomputed analysis is used as given', () => {
  const decision = example.authorize(exec('ls', { analysis: { programs: ['rm'], analysable: true, reasons: [] } }));
  assert.equal(decision.decision, 'deny');
});

test('forContract compiles a contract once', () => {
  const contract = parseContract(EXAMPLE_CONTRACT);
  assert.equal(CedarPolicySet.forContract(contract), CedarPolicySet.forContract(contract));
});

test('a hand-built contract with broken Cedar is rejected at compile time', () => {
  const broken = { ...parseContract({ version: 1 }), policies: [{ id: 'p', text: 'permit(' }] } as SessionContract;
  assert.throws(() => new CedarPolicySet(broken), (error: unknown) => isAirlockError(error, 'INVALID_CONTRACT'));
});

test('policies gate fork by the number of branches and snapshot by its action', () => {
  const set = withPolicies([
    'permit(principal, action, resource);',
    '@id("few-branches") forbid(principal, action == Airlock::Action::"fork", resource) when { context.branches > 4 };',
    '@id("snapshots-need-a-human") @approval("required") permit(principal, action == Airlock::Action::"snapshot", resource);',
  ]);
  const fork = (branches: number) => set.authorize({ sessionId: 'ses_1', tool: 'fork', branches });
  assert.equal(fork(4).decision, 'allow');
  const tooMany = fork(5);
  assert.equal(tooMany.decision, 'deny');
  assert.deepEqual(tooMany.policyIds, ['few-branches']);
  assert.equal(tooMany.reason, 'policy few-branches forbids fork: 5 branches');
  const snapshot = set.authorize({ sessionId: 'ses_1', tool: 'snapshot' });
  assert.equal(snapshot.decision, 'ask');
  assert.deepEqual(snapshot.policyIds, ['snapshots-need-a-human']);
  // branches is 0 for every other tool, so a fork rule never catches them
  assert.equal(set.authorize(exec('ls', { branches: 9 })).decision, 'allow');
});
