/**
 * The contract's filesystem rules held by the sandbox's own mounts, end to
 * end against a real server and gVisor: on image paths (present or not in
 * the image), in a per-call sandbox, across suspend and resume (a restore
 * keeps the mounts), in fork branches (which still get their own
 * machine-id), and against renaming a parent of a protected path. The
 * hostile suite (policy-evasion, path-escapes) has the attacks on
 * /workspace paths; this file has the lifecycle.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestInstallation } from '../support/test-installation.js';
import { HostileApi } from '../support/hostile-kit.js';

const PROTECTED = 'protected\n';
/** Rules on /workspace and on image paths (/opt/app is not in the image), over a writable root. */
const IMAGE_RULES = { readOnly: ['/workspace/a/keep'], denyWrite: ['/etc', '/opt/app'], denyRead: ['/workspace/private'] };
/** The same with allowWrite: the root is read-only. */
const ALLOW_WRITE_RULES = { ...IMAGE_RULES, allowWrite: ['/workspace', '/tmp'] };
/** Tries every protected path; prints one line per attempt that got through. */
const attacks = (allowWrite: boolean): string =>
  [
    ': > /workspace/a/keep/file 2>/dev/null && echo "emptied keep"',
    'echo pwned >> /etc/passwd 2>/dev/null && echo "wrote /etc/passwd"',
    'mkdir -p /opt/app/x 2>/dev/null && echo "made /opt/app/x"',
    ...(allowWrite
      ? ['echo planted > /usr/planted 2>/dev/null && echo "wrote outside allowWrite"']
      : ['echo fine > /root/ok || echo "control: the root is writable"']),
    'cat /workspace/private/token 2>/dev/null',
    'mv /workspace/a /workspace/moved 2>/dev/null && echo "moved the parent of keep"',
    'true',
  ].join('; ');

describe('filesystem rules held by the sandbox across its lifecycle', { timeout: 600_000 }, () => {
  let installation: TestInstallation;
  let api: HostileApi;
  /** a session of each kind: image rules over a writable root, and with allowWrite */
  const ids = { image: '', allowWrite: '' };
  const onHost = (sessionId: string, path: string): string => join(installation.dataDir, 'disks', sessionId, 'mnt', path);
  const put = (sessionId: string): void => {
    mkdirSync(onHost(sessionId, 'workspace/a/keep'), { recursive: true });
    writeFileSync(onHost(sessionId, 'workspace/a/keep/file'), PROTECTED);
    mkdirSync(onHost(sessionId, 'workspace/private'), { recursive: true });
    writeFileSync(onHost(sessionId, 'workspace/private/token'), 'the-token');
  };
  const kindOf = (sessionId: string, fallback: keyof typeof ids = 'image'): keyof typeof ids => (ids.allowWrite === sessionId ? 'allowWrite' : fallback);
  const assertHeld = async (sessionId: string, what: string, options: { ephemeral?: boolean; kind?: keyof typeof ids } = {}): Promise<void> => {
    const ephemeral = options.ephemeral === true;
    const output = await api.run(sessionId, attacks((options.kind ?? kindOf(sessionId)) === 'allowWrite'), { ephemeral });
    assert.equal(output.stdout, '', `${what}: every attempt is refused by the machine (${output.stderr})`);
    assert.equal(readFileSync(onHost(sessionId, 'workspace/a/keep/file'), 'utf8'), PROTECTED, `${what}: the protected file is intact`);
    const works = await api.run(sessionId, 'echo fine > /workspace/ok && echo fine > /tmp/ok && cat /workspace/a/keep/file /workspace/ok /tmp/ok', {
      ephemeral,
    });
    assert.equal(works.stdout, `${PROTECTED}fine\nfine\n`, `${what}: control: allowed writes and reads work (${works.stderr})`);
  };

  before(async () => {
    installation = await TestInstallation.start();
    api = new HostileApi(installation);
    [ids.image, ids.allowWrite] = await Promise.all([
      api.createSession({ version: 1, idle: { keepAwake: true }, filesystem: IMAGE_RULES }),
      api.createSession({ version: 1, idle: { keepAwake: true }, filesystem: ALLOW_WRITE_RULES }),
    ]);
    put(ids.image);
    put(ids.allowWrite);
  });

  after(async () => {
    await installation?.destroy();
  });

  it('holds on /workspace and image paths, including one the image does not have, in the machine and a per-call sandbox', async () => {
    for (const [kind, id] of Object.entries(ids)) {
      await assertHeld(id, `${kind}: the machine`);
      await assertHeld(id, `${kind}: a per-call sandbox`, { ephemeral: true });
    }
    const open = await api.createSession({ version: 1, idle: { keepAwake: true } });
    put(open);
    const control = await api.run(open, attacks(true));
    assert.match(
      control.stdout,
      /emptied keep[\s\S]*wrote \/etc\/passwd[\s\S]*made \/opt\/app\/x[\s\S]*wrote outside allowWrite[\s\S]*the-token[\s\S]*moved the parent/,
      'control: without rules every attempt works',
    );
    await api.terminate(open);
  });

  it('keeps its mounts across suspend and resume (the restore has the same mount set)', async () => {
    for (const [kind, id] of Object.entries(ids)) {
      const suspended = installation.cli(['sessions', 'suspend', id, '--json']);
      assert.equal(suspended.code, 0, suspended.stderr);
      assert.equal((JSON.parse(suspended.stdout) as { state: string }).state, 'suspended');
      await assertHeld(id, `${kind}: after resume`);
      assert.equal((await api.session(id)).state, 'running', 'the call resumed the machine');
    }
  });

  it('holds in fork branches, which still get a machine-id of their own under a read-only /etc', async () => {
    for (const [kind, id] of Object.entries(ids) as [keyof typeof ids, string][]) {
      const parentId = (await api.sh(id, 'cat /etc/machine-id 2>/dev/null || echo none')).trim();
      const forked = installation.cli(['sessions', 'fork', id, '--count', '2', '--json']);
      assert.equal(forked.code, 0, `${kind}: ${forked.stderr}`);
      const branches = (JSON.parse(forked.stdout) as { id: string }[]).map((branch) => branch.id);
      const machineIds = [parentId];
      for (const branch of branches) {
        await assertHeld(branch, `${kind}: branch ${branch}`, { kind });
        machineIds.push((await api.sh(branch, 'cat /etc/machine-id')).trim());
      }
      assert.equal(new Set(machineIds).size, 3, `${kind}: each branch has its own machine-id: ${machineIds.join(' ')}`);
      assert.ok(
        machineIds.slice(1).every((machineId) => /^[0-9a-f]{32}$/.test(machineId)),
        machineIds.join(' '),
      );
    }
  });
});
