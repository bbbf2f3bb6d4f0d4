/**
 * Hostile suite: a filesystem rule cannot be carried away by renaming what
 * it hangs from (issue 22). A rule is a mount inside the sandbox, and a mount
 * moves with its parent: with `denyWrite: ["/usr/local/bin"]`, `mv /usr/local
 * /usr/local.moved && mkdir -p /usr/local/bin` used to leave a writable
 * /usr/local/bin where the rule was, and files.read served what was planted
 * there. Every parent of every rule path (denyWrite, readOnly, denyRead; in
 * the image, in /tmp) must be pinned: renaming it, or any ancestor, fails.
 * The pins must survive a suspend and resume (a restore does not boot the
 * agent again).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestInstallation } from '../support/test-installation.js';
import { HostileApi } from '../support/hostile-kit.js';

/** A rule, the path a rename would carry it from, and an ancestor above that. */
const RULES = [
  { kind: 'denyWrite', path: '/usr/local/bin', parent: '/usr/local', ancestor: '/usr' },
  { kind: 'denyWrite', path: '/etc/ssl/certs', parent: '/etc/ssl', ancestor: '/etc' },
  { kind: 'denyWrite', path: '/tmp/locked/sub', parent: '/tmp/locked', ancestor: '/tmp' },
  { kind: 'readOnly', path: '/opt/app/conf', parent: '/opt/app', ancestor: '/opt' },
  { kind: 'denyRead', path: '/srv/data/secret', parent: '/srv/data', ancestor: '/srv' },
] as const;

describe('hostile: the parents of a filesystem rule cannot be renamed', { timeout: 600_000 }, () => {
  let installation: TestInstallation;
  let api: HostileApi;
  let session = '';

  before(async () => {
    installation = await TestInstallation.start();
    api = new HostileApi(installation);
    const lists = (kind: string) => RULES.filter((rule) => rule.kind === kind).map((rule) => rule.path);
    session = await api.createSession({
      version: 1,
      idle: { keepAwake: true },
      filesystem: { denyWrite: lists('denyWrite'), readOnly: lists('readOnly'), denyRead: lists('denyRead') },
    });
  });

  after(async () => {
    await installation?.destroy();
  });

  /** Tries the sequence on every rule: rename the parent, remake the path, plant a file; then the ancestor. */
  const attack = async (label: string): Promise<void> => {
    for (const rule of RULES) {
      const what = `${label}: ${rule.kind} ${rule.path}`;
      const planted = await api.run(session, `mv ${rule.parent} ${rule.parent}.moved && mkdir -p ${rule.path} && echo x > ${rule.path}/planted`);
      assert.notEqual(planted.exitCode, 0, `${what}: renaming ${rule.parent} and planting under the rule path worked`);
      const state = await api.run(session, `test -e ${rule.parent}.moved || test -e ${rule.path}/planted`);
      assert.notEqual(state.exitCode, 0, `${what}: ${rule.parent} was renamed or the planted file is there`);
      const read = await api.tool(session, 'files.read', { path: `${rule.path}/planted` });
      assert.ok(read.code !== 'ok' || read.result['content'] !== 'x\n', `${what}: files.read served the planted file`);
      const ancestor = await api.run(session, `mv ${rule.ancestor} ${rule.ancestor}.moved`);
      assert.notEqual(ancestor.exitCode, 0, `${what}: renaming the ancestor ${rule.ancestor} worked`);
      assert.equal((await api.run(session, `test -e ${rule.ancestor}.moved`)).exitCode, 1, `${what}: ${rule.ancestor}.moved exists`);
      const removed = await api.run(session, `rmdir ${rule.parent}`);
      assert.notEqual(removed.exitCode, 0, `${what}: removing ${rule.parent} worked`);
    }
    // Control: a directory no rule depends on, beside the pinned ones, is renamed as usual.
    await api.sh(
      session,
      'mkdir -p /opt/free/inner /tmp/free/inner && mv /opt/free /opt/free.moved && mv /tmp/free /tmp/free.moved && test -d /opt/free.moved/inner && rm -r /opt/free.moved /tmp/free.moved',
    );
    // The rules themselves still hold.
    assert.notEqual((await api.run(session, 'echo x > /usr/local/bin/direct')).exitCode, 0, `${label}: /usr/local/bin is writable`);
    assert.notEqual((await api.run(session, 'ls /srv/data/secret')).exitCode, 0, `${label}: /srv/data/secret is readable`);
    await api.sh(session, 'echo ok > /usr/local/beside && rm /usr/local/beside');
  };

  it('renaming or removing a parent or an ancestor of a rule path fails, for denyWrite, readOnly and denyRead, in the image and in /tmp', async () => {
    await attack('started');
    // A per-call sandbox over the same disk boots its own agent: pinned there too.
    const fresh = await api.run(session, 'mv /usr/local /usr/local.moved && mkdir -p /usr/local/bin && echo x > /usr/local/bin/planted', { ephemeral: true });
    assert.notEqual(fresh.exitCode, 0, 'per-call sandbox: renaming /usr/local worked');
  });

  it('the pins hold after a suspend and resume', async () => {
    const suspended = await api.request('POST', `/v1/sessions/${session}/suspend`);
    assert.equal(suspended.code, 'ok', `${suspended.code} ${suspended.message}`);
    assert.equal((await api.session(session)).state, 'suspended');
    await attack('resumed');
  });
});
