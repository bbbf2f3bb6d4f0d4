import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAirlockError, type AirlockError } from '../../../src/core/errors.js';
import {
  DEFAULT_CONTRACT,
  PERMIT_ALL_POLICY,
  parseContract,
  parseContractText,
} from '../../../src/policy/session-contract.js';
import { TOOL_NAMES } from '../../../src/policy/policy-vocabulary.js';
import { EXAMPLE_CONTRACT, EXAMPLE_CONTRACT_YAML } from './example-contract.js';

interface Issue {
  path: string;
  message: string;
}

function issuesOf(run: () => unknown): Issue[] {
  try {
    run();
  } catch (error) {
    assert.ok(isAirlockError(error, 'INVALID_CONTRACT'), `expected INVALID_CONTRACT, got ${String(error)}`);
    return (error as AirlockError).details['errors'] as Issue[];
  }
  assert.fail('expected the contract to be rejected');
}

function hasIssue(issues: Issue[], path: string, pattern: RegExp): void {
  assert.ok(
    issues.some((issue) => issue.path === path && pattern.test(issue.message)),
    `no issue at ${path} matching ${pattern}; got ${JSON.stringify(issues, null, 1)}`,
  );
}

test('the example contract parses with ids, defaults and normalized paths', () => {
  const contract = parseContract(EXAMPLE_CONTRACT);
  assert.deepEqual(contract.identity, { tenant: 'acme', principal: 'agent-7', objective: 'fix the failing test' });
  assert.deepEqual(contract.policies.map((policy) => policy.id), ['policy0', 'policy1', 'policy2']);
  assert.equal(contract.policies[1]?.text, EXAMPLE_CONTRACT.policies[1]);
  assert.deepEqual(contract.filesystem, { readOnly: [], denyRead: [], denyWrite: ['/etc', '/workspace/secret'] });
  assert.deepEqual(contract.resources, { cpus: 1, memoryMb: 512, diskMb: 2048, maxProcesses: 256 });
  assert.deepEqual(contract.tools, [...TOOL_NAMES]);
  assert.deepEqual(contract.idle, { suspendAfterSeconds: 300, keepAwake: false });
  assert.equal(contract.enforcement, 'enforce');
  assert.equal(contract.guard.maxIdenticalFailures, 20);
  assert.ok(Object.isFrozen(contract) && Object.isFrozen(contract.filesystem.denyWrite) && Object.isFrozen(contract.policies[0]));
});

test('a parsed contract is valid input and parses to itself', () => {
  const contract = parseContract(EXAMPLE_CONTRACT);
  assert.deepEqual(parseContract(JSON.parse(JSON.stringify(contract))), contract);
});

test('DEFAULT_CONTRACT permits everything with default resources', () => {
  assert.deepEqual(DEFAULT_CONTRACT.policies, [PERMIT_ALL_POLICY]);
  assert.deepEqual(DEFAULT_CONTRACT.identity, { tenant: 'default', principal: 'agent' });
  assert.equal(DEFAULT_CONTRACT.resources.memoryMb, 512);
  assert.equal(DEFAULT_CONTRACT.filesystem.allowWrite, undefined);
});

test('an explicit empty policy list is kept: nothing is permitted', () => {
  assert.deepEqual(parseContract({ version: 1, policies: [] }).policies, []);
});

test('unknown keys are errors with their path and the allowed keys', () => {
  const issues = issuesOf(() =>
    parseContract({ version: 1, extra: 1, identity: { tenant: 'a', role: 'x' }, guard: { maxIdenticalFailure: 3 } }),
  );
  hasIssue(issues, 'extra', /unknown key \(allowed: version, identity/);
  hasIssue(issues, 'identity.role', /unknown key \(allowed: tenant, principal, agent, objective, task\)/);
  hasIssue(issues, 'guard.maxIdenticalFailure', /unknown key \(allowed: maxIdenticalFailures\)/);
  assert.equal(issues.length, 3);
});

test('every type error is listed at once, with its path', () => {
  const issues = issuesOf(() =>
    parseContract({
      version: 2,
      guard: { maxIdenticalFailures: '20' },
      resources: { cpus: 0, memoryMb: 100.5 },
      tools: ['exec', 'shell'],
      enforcement: 'audit',
      budgets: { maxToolCalls: -1 },
      idle: { pauseAfterSeconds: 600 },
    }),
  );
  hasIssue(issues, 'version', /expected 1/);
  hasIssue(issues, 'guard.maxIdenticalFailures', /^expected number/);
  hasIssue(issues, 'resources.cpus', />=0\.1/);
  hasIssue(issues, 'resources.memoryMb', /integer/);
  hasIssue(issues, 'tools[1]', /expected one of/);
  hasIssue(issues, 'enforcement', /enforce/);
  hasIssue(issues, 'budgets.maxToolCalls', />=1/);
  hasIssue(issues, 'idle.pauseAfterSeconds', /less than suspendAfterSeconds/);
  assert.equal(issues.length, 8);
});

test('the error message lists every problem and says what to do', () => {
  try {
    parseContract({ version: 1, guard: { maxIdenticalFailures: 'x' }, policies: ['permit(principal'] });
    assert.fail('expected a rejection');
  } catch (error) {
    assert.ok(isAirlockError(error, 'INVALID_CONTRACT'));
    assert.equal(error.status, 400);
    assert.match(error.message, /2 errors/);
    assert.match(error.message, /- guard\.maxIdenticalFailures: expected number, received string/);
    assert.match(error.message, /- policies\[0\]: Cedar syntax error/);
  }
});

test('a missing version and a non-object contract are reported', () => {
  hasIssue(issuesOf(() => parseContract({})), 'version', /required/);
  hasIssue(issuesOf(() => parseContract('version: 1')), '', /expected object/);
  hasIssue(issuesOf(() => parseContract(null)), '', /expected object/);
});

test('Cedar syntax errors name the policy index and the position', () => {
  const issues = issuesOf(() =>
    parseContract({
      version: 1,
      policies: ['permit(principal, action, resource);', 'forbid(principal, action, resource);', 'permit(principal, action resource);'],
    }),
  );
  assert.equal(issues.length, 1);
  hasIssue(issues, 'policies[2]', /^Cedar syntax error at line 1, column \d+: /);
});

test('policies are type-checked against the vocabulary', () => {
  const issues = issuesOf(() =>
    parseContract({
      version: 1,
      policies: [
        'permit(principal, action == Airlock::Action::"exex", resource);',
        'forbid(principal, action, resource) when { context.program == "rm" };',
        'forbid(principal, action, resource) when { context.callCount == "1" };',
        'permit(principal, action == Airlock::Action::"files.read", resource) when { context.path like "/workspace/*" };',
      ],
    }),
  );
  hasIssue(issues, 'policies[0]', /unrecognized action .*did you mean `Airlock::Action::"exec"`/);
  hasIssue(issues, 'policies[1]', /program/);
  hasIssue(issues, 'policies[2]', /type/);
  assert.ok(!issues.some((issue) => issue.path === 'policies[3]'));
});

test('policy entries: ids, annotations, templates and shapes are checked', () => {
  const issues = issuesOf(() =>
    parseContract({
      version: 1,
      policies: [
        { id: 'a', text: 'permit(principal, action, resource);' },
        { id: 'a', text: 'forbid(principal, action, resource) when { context.callCount > 5 };' },
        '@approval("maybe") permit(principal, action, resource);',
        '@approval("required") forbid(principal, action, resource);',
        'permit(principal == ?principal, action, resource);',
        42,
        { id: 'x y', text: 'permit(principal, action, resource);' },
        { text: 'permit(principal, action, resource);', file: 'p.cedar' },
        { body: 'permit(principal, action, resource);' },
        '',
      ],
    }),
  );
  hasIssue(issues, 'policies[1]', /duplicate policy id "a" \(also used by policies\[0\]\)/);
  hasIssue(issues, 'policies[2]', /@approval must be "required"/);
  hasIssue(issues, 'policies[3]', /applies to permit policies only/);
  hasIssue(issues, 'policies[4]', /templates/);
  hasIssue(issues, 'policies[5]', /expected a Cedar policy string or an object/);
  hasIssue(issues, 'policies[6].id', /expected 1-128/);
  hasIssue(issues, 'policies[7]', /exactly one of "text" .* or "file"/);
  hasIssue(issues, 'policies[8].body', /unknown key \(allowed: id, text, file\)/);
  hasIssue(issues, 'policies[9]', /contains no Cedar policy/);
  const order = issues.map((issue) => Number(/\[(\d+)\]/.exec(issue.path)?.[1]));
  assert.deepEqual(order, [...order].sort((a, b) => a - b), 'issues are reported in entry order');
});

test('ids come from the entry, then @id, then the index; a multi-policy entry gets suffixes', () => {
  const contract = parseContract({
    version: 1,
    policies: [
      { id: 'base', text: 'permit(principal, action, resource);' },
      '@id("no-rm") forbid(principal, action, resource) when { context.programs.contains("rm") };',
      'forbid(principal, action, resource) when { context.callCount > 100 }; forbid(principal, action, resource) when { context.identicalFailures > 3 };',
    ],
  });
  assert.deepEqual(contract.policies.map((policy) => policy.id), ['base', 'no-rm', 'policy2.0', 'policy2.1']);
});

test('filesystem paths must be absolute and are normalized and deduplicated', () => {
  const contract = parseContract({
    version: 1,
    filesystem: { readOnly: ['/usr/', '/usr', '/opt/./tools'], allowWrite: ['/workspace/../tmp', '/'] },
  });
  assert.deepEqual(contract.filesystem.readOnly, ['/usr', '/opt/tools']);
  assert.deepEqual(contract.filesystem.allowWrite, ['/tmp', '/']);
  const issues = issuesOf(() => parseContract({ version: 1, filesystem: { denyRead: ['etc', '/ok', './x', ''] } }));
  hasIssue(issues, 'filesystem.denyRead[0]', /absolute path/);
  hasIssue(issues, 'filesystem.denyRead[2]', /absolute path/);
  hasIssue(issues, 'filesystem.denyRead[3]', /absolute path/);
  assert.equal(issues.length, 3);
});

test('network domains are exact names or *.wildcards with an optional port', () => {
  const contract = parseContract({
    version: 1,
    network: { allowedDomains: ['example.com', '*.GitHub.com', 'packages.example.org:443'], deniedDomains: [] },
  });
  assert.deepEqual(contract.network?.allowedDomains, ['example.com', '*.github.com', 'packages.example.org:443']);
  const bad = ['*', 'http://example.com', 'example.com/path', '*.*.com', 'a..b', 'example.com:99999', '-x.com', 'exa mple.com'];
  const issues = issuesOf(() => parseContract({ version: 1, network: { allowedDomains: bad } }));
  assert.deepEqual(issues.map((issue) => issue.path), bad.map((_, index) => `network.allowedDomains[${index}]`));
});

test('YAML and JSON text parse to the same contract; auto detects the format', () => {
  const fromYaml = parseContractText(EXAMPLE_CONTRACT_YAML, 'yaml');
  const fromJson = parseContractText(JSON.stringify(EXAMPLE_CONTRACT), 'json');
  assert.deepEqual(fromYaml, fromJson);
  assert.deepEqual(parseContractText(EXAMPLE_CONTRACT_YAML, 'auto'), fromJson);
  assert.deepEqual(parseContractText(`  ${JSON.stringify(EXAMPLE_CONTRACT)}`, 'auto'), fromJson);
});

test('text syntax errors are contract errors with a position', () => {
  hasIssue(issuesOf(() => parseContractText('{"version": 1,}', 'auto')), '', /^JSON syntax error/);
  hasIssue(issuesOf(() => parseContractText('version: 1\npolicies: [\n', 'yaml')), '', /^YAML syntax error: .*line \d+, column \d+/);
  hasIssue(issuesOf(() => parseContractText('version: 1\nversion: 1\n', 'yaml')), '', /unique/i);
  hasIssue(issuesOf(() => parseContractText('', 'auto')), '', /expected object/);
});

test('YAML validation errors carry the same paths as JSON ones', () => {
  const issues = issuesOf(() => parseContractText('version: 1\nguard:\n  maxIdenticalFailures: many\n', 'auto'));
  hasIssue(issues, 'guard.maxIdenticalFailures', /expected number, received string/);
});

test('policies can come from files relative to baseDir', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-contract-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'policies'));
  writeFileSync(
    join(dir, 'policies', 'exec.cedar'),
    '// exec rules\nforbid(principal, action == Airlock::Action::"exec", resource)\n  when { context.programs.contains("rm") };\n' +
      '@approval("required")\npermit(principal, action == Airlock::Action::"exec", resource)\n  when { context.programs.contains("tar") };\n',
  );
  writeFileSync(join(dir, 'broken.cedar'), 'permit(principal, action, resource);\n\nforbid(principal action, resource);\n');
  const yaml = 'version: 1\npolicies:\n  - permit(principal, action, resource);\n  - { id: exec-rules, file: policies/exec.cedar }\n';
  const contract = parseContractText(yaml, 'yaml', { baseDir: dir });
  assert.deepEqual(contract.policies.map((policy) => policy.id), ['policy0', 'exec-rules.0', 'exec-rules.1']);
  assert.match(contract.policies[2]?.text ?? '', /@approval\("required"\)/);

  const missing = issuesOf(() => parseContract({ version: 1, policies: [{ file: 'nope.cedar' }] }, { baseDir: dir }));
  hasIssue(missing, 'policies[0].file', new RegExp(`cannot read policy file ".*nope\\.cedar": no such file`));
  const directory = issuesOf(() => parseContract({ version: 1, policies: [{ file: 'policies' }] }, { baseDir: dir }));
  hasIssue(directory, 'policies[0].file', /directory/);
  const broken = issuesOf(() => parseContract({ version: 1, policies: ['x', { file: 'broken.cedar' }] }, { baseDir: dir }));
  hasIssue(broken, 'policies[1]', /^Cedar syntax error at line 3, column \d+/);
});

test('without baseDir a policy file is refused, so an API contract cannot read server files', () => {
  const issues = issuesOf(() => parseContract({ version: 1, policies: [{ file: '/etc/passwd' }] }));
  hasIssue(issues, 'policies[0].file', /only read for contracts loaded from disk/);
});
