import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  FilesystemPolicy,
  isCanonicalPath,
  isPathWithin,
  normalizeAbsolutePath,
  type FilesystemRules,
} from '../../../src/policy/filesystem-policy.js';
import { parseContract } from '../../../src/policy/session-contract.js';

function policy(rules: Partial<FilesystemRules>): FilesystemPolicy {
  return new FilesystemPolicy({ readOnly: [], denyRead: [], denyWrite: [], ...rules });
}

test('a prefix covers itself and what is under it, not siblings sharing its spelling', () => {
  const fs = policy({ denyWrite: ['/etc'] });
  assert.equal(fs.check('/etc', 'write').decision, 'deny');
  assert.equal(fs.check('/etc/passwd', 'write').decision, 'deny');
  assert.equal(fs.check('/etc/ssh/sshd_config', 'write').decision, 'deny');
  assert.equal(fs.check('/etcetera', 'write').decision, 'allow');
  assert.equal(fs.check('/etc.d/x', 'write').decision, 'allow');
  assert.equal(fs.check('/', 'write').decision, 'allow');
  assert.equal(fs.check('/etc/passwd', 'read').decision, 'allow');
});

test('the deny reason names the path, the prefix and the contract list', () => {
  const decision = policy({ denyWrite: ['/etc'] }).check('/etc/passwd', 'write');
  assert.deepEqual(decision, {
    decision: 'deny',
    reason: 'writing /etc/passwd is denied: /etc is listed in filesystem.denyWrite',
    rule: { list: 'denyWrite', prefix: '/etc' },
  });
});

test('denyRead hides a path: neither readable nor writable', () => {
  const fs = policy({ denyRead: ['/workspace/.env'] });
  assert.equal(fs.check('/workspace/.env', 'read').rule?.list, 'denyRead');
  assert.equal(fs.check('/workspace/.env', 'write').rule?.list, 'denyRead');
  assert.equal(fs.check('/workspace/.envrc', 'read').decision, 'allow');
});

test('readOnly counts as denyWrite', () => {
  const fs = policy({ readOnly: ['/usr'] });
  assert.equal(fs.check('/usr/bin/ls', 'read').decision, 'allow');
  const decision = fs.check('/usr/bin/ls', 'write');
  assert.equal(decision.decision, 'deny');
  assert.equal(decision.rule?.list, 'readOnly');
  assert.match(decision.reason, /read-only/);
});

test('allowWrite restricts writes to its prefixes; denyWrite still wins inside them', () => {
  const fs = policy({ allowWrite: ['/workspace', '/tmp'], denyWrite: ['/workspace/secret'] });
  assert.equal(fs.check('/workspace/src/a.ts', 'write').decision, 'allow');
  assert.equal(fs.check('/tmp', 'write').decision, 'allow');
  assert.equal(fs.check('/workspace/secret/key', 'write').rule?.list, 'denyWrite');
  const outside = fs.check('/home/agent/.bashrc', 'write');
  assert.equal(outside.rule?.list, 'allowWrite');
  assert.match(outside.reason, /only under \/workspace, \/tmp/);
  assert.equal(fs.check('/home/agent/.bashrc', 'read').decision, 'allow');
});

test('an empty allowWrite allows writes nowhere; an absent one everywhere', () => {
  assert.match(policy({ allowWrite: [] }).check('/workspace/a', 'write').reason, /nowhere/);
  assert.equal(policy({}).check('/workspace/a', 'write').decision, 'allow');
});

test('a root prefix covers everything', () => {
  assert.equal(policy({ denyWrite: ['/'] }).check('/workspace/a', 'write').decision, 'deny');
  assert.equal(policy({ allowWrite: ['/'] }).check('/anything', 'write').decision, 'allow');
});

test('a subtree operation is denied when a protected prefix lies inside it', () => {
  const fs = policy({ denyWrite: ['/workspace/secret'], denyRead: ['/workspace/.env'] });
  assert.equal(fs.check('/workspace', 'write').decision, 'allow');
  const removeAll = fs.check('/workspace', 'write', { subtree: true });
  assert.equal(removeAll.decision, 'deny');
  assert.equal(fs.check('/', 'read', { subtree: true }).rule?.prefix, '/workspace/.env');
  assert.equal(fs.check('/workspace/src', 'write', { subtree: true }).decision, 'allow');
  assert.equal(fs.check('/workspace/secretary', 'write', { subtree: true }).decision, 'allow');
});

test('paths that are not canonical are denied, never guessed at', () => {
  const fs = policy({});
  for (const path of ['relative/a', '', '/workspace/../etc/passwd', '/workspace/./a', '/workspace//a', '/workspace/', '/a\0b']) {
    const decision = fs.check(path, 'read');
    assert.equal(decision.decision, 'deny', JSON.stringify(path));
    assert.equal(decision.rule?.list, 'path');
  }
});

test('checkTool applies every access a tool needs', () => {
  const fs = policy({ readOnly: ['/usr'], denyRead: ['/secret'] });
  assert.equal(fs.checkTool('files.read', '/usr/x').decision, 'allow');
  assert.equal(fs.checkTool('files.edit', '/usr/x').decision, 'deny');
  assert.equal(fs.checkTool('files.stat', '/secret/x').decision, 'deny');
  assert.equal(fs.checkTool('files.mkdir', '/usr/lib/new').decision, 'deny');
  assert.equal(fs.checkTool('files.list', '/usr').decision, 'allow');
});

test('works on the normalized lists of a parsed contract', () => {
  const contract = parseContract({ version: 1, filesystem: { denyWrite: ['/etc/', '/workspace/secret'] } });
  const fs = new FilesystemPolicy(contract.filesystem);
  assert.equal(fs.check('/etc/hosts', 'write').decision, 'deny');
  assert.equal(fs.check('/workspace/secret', 'write').decision, 'deny');
  assert.equal(fs.check('/workspace/public', 'write').decision, 'allow');
});

test('path helpers', () => {
  assert.equal(normalizeAbsolutePath('/a/b/../c/'), '/a/c');
  assert.equal(normalizeAbsolutePath('/'), '/');
  assert.equal(normalizeAbsolutePath('//a'), '/a');
  assert.equal(normalizeAbsolutePath('a'), undefined);
  assert.equal(isCanonicalPath('/a/c'), true);
  assert.equal(isCanonicalPath('/a/c/'), false);
  assert.equal(isPathWithin('/a/b', '/a'), true);
  assert.equal(isPathWithin('/ab', '/a'), false);
  assert.equal(isPathWithin('/anything', '/'), true);
});
