/**
 * The contract's filesystem rules as a gVisor sandbox's mounts: the plan
 * (which paths are read-only, masked, writable, pinned), the host sources
 * (missing mount points made on the session disk, symlinks refused) and the
 * OCI spec that carries them. That the kernel of a
 * real sandbox refuses what they say is proven by the hostile suite
 * (policy-evasion, path-escapes) against runsc.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FilesystemRules } from '../../../src/core/session-contract.js';
import { agentPinsOf, hasFilesystemRules, planFilesystemMounts } from '../../../src/drivers/gvisor/filesystem-mounts.js';
import { prepareRules, resolveRuleMounts, ruleMountsOf, type MountSourceLayout } from '../../../src/drivers/gvisor/filesystem-mount-sources.js';
import { buildOciSpec } from '../../../src/drivers/gvisor/oci-spec.js';

const NONE: FilesystemRules = { readOnly: [], denyRead: [], denyWrite: [] };
const rules = (overrides: Partial<FilesystemRules>): FilesystemRules => ({ ...NONE, ...overrides });
const summary = (rulesIn: FilesystemRules): string[] =>
  planFilesystemMounts(rulesIn).mounts.map((mount) => `${mount.destination} ${mount.access}${mount.pin ? ' pin' : ''}`);

describe('filesystem mount plan', () => {
  it('no lists, no mounts: the sandbox looks as it did before rules existed', () => {
    assert.equal(hasFilesystemRules(NONE), false);
    assert.equal(hasFilesystemRules(undefined), false);
    assert.equal(hasFilesystemRules(rules({ allowWrite: [] })), true, 'an empty allowWrite is a rule: writes nowhere');
    const plan = planFilesystemMounts(NONE);
    assert.deepEqual(plan, { rootReadonly: false, workspaceReadonly: false, tmpReadonly: false, mounts: [] });
  });

  it('denyWrite and readOnly are read-only mounts, denyRead a mask, outermost first', () => {
    assert.deepEqual(summary(rules({ readOnly: ['/workspace/keep'], denyWrite: ['/workspace/locked', '/etc'], denyRead: ['/workspace/private'] })), [
      '/etc read-only',
      '/workspace/keep read-only',
      '/workspace/locked read-only',
      '/workspace/private mask',
      '/etc/machine-id read-write',
    ]);
  });

  it('allowWrite makes the root read-only and its prefixes writable; a read-only rule wins inside it', () => {
    const plan = planFilesystemMounts(
      rules({ allowWrite: ['/workspace/out', '/tmp', '/opt/data'], denyWrite: ['/workspace/out/locked'], readOnly: ['/workspace/keep'] }),
    );
    assert.equal(plan.rootReadonly, true);
    assert.equal(plan.workspaceReadonly, true, '/workspace is not under any allowWrite prefix');
    assert.equal(plan.tmpReadonly, false);
    assert.deepEqual(
      plan.mounts.map((mount) => `${mount.destination} ${mount.access}`),
      ['/opt/data read-write', '/workspace/out read-write', '/workspace/out/locked read-only', '/etc/machine-id read-write'],
      '/workspace/keep needs no mount: the read-only /workspace holds it already',
    );
    assert.equal(planFilesystemMounts(rules({ allowWrite: ['/'] })).rootReadonly, false, 'allowWrite of / leaves the root writable');
    assert.equal(planFilesystemMounts(rules({ allowWrite: [] })).tmpReadonly, true, 'an empty allowWrite: /tmp too is read-only');
  });

  it('a mask hides every rule under it, and a rule that changes nothing gets no mount', () => {
    assert.deepEqual(summary(rules({ denyRead: ['/workspace/a'], denyWrite: ['/workspace/a/b'], readOnly: ['/workspace/a/b/c'] })), ['/workspace/a mask']);
    assert.deepEqual(summary(rules({ denyWrite: ['/workspace/x'], readOnly: ['/workspace/x/y'] })), ['/workspace/x read-only']);
  });

  it('pins every writable parent between /workspace and a rule, so it cannot be renamed away', () => {
    assert.deepEqual(summary(rules({ readOnly: ['/workspace/a/b/keep'] })), [
      '/workspace/a read-write pin',
      '/workspace/a/b read-write pin',
      '/workspace/a/b/keep read-only',
    ]);
    assert.deepEqual(
      summary(rules({ denyWrite: ['/workspace/a'], allowWrite: ['/workspace/a/b/out', '/workspace'] })),
      ['/workspace/a read-only', '/etc/machine-id read-write'],
      'allowWrite inside a denyWrite stays read-only: no mount, no pin',
    );
  });

  it('has the agent pin every parent of a mount outside /workspace, outermost first, up to but not /', () => {
    assert.deepEqual(agentPinsOf(['/tmp', '/tmp/locked/sub', '/usr/local/bin', '/etc/ssl/certs', '/etc/machine-id', '/workspace/a/b', '/opt']), [
      '/etc',
      '/usr',
      '/etc/ssl',
      '/tmp/locked',
      '/usr/local',
    ]);
    assert.deepEqual(agentPinsOf(['/usr', '/workspace/x/y']), [], 'a top-level mount has no parent to pin; /workspace pins its own in the plan');
  });

  it("keeps /etc/machine-id writable under a read-only rule, for a fork branch's identity", () => {
    assert.deepEqual(summary(rules({ denyWrite: ['/etc'] })), ['/etc read-only', '/etc/machine-id read-write']);
    assert.deepEqual(summary(rules({ allowWrite: ['/workspace'] })), ['/etc/machine-id read-write'], 'a read-only root too');
    assert.deepEqual(summary(rules({ denyWrite: ['/etc/ssl'] })), ['/etc/ssl read-only'], 'not when the rule leaves it writable');
    assert.deepEqual(summary(rules({ denyRead: ['/etc'] })), ['/etc mask'], 'not when the rule hides it');
  });

  it("leaves the machine's own filesystems alone: /proc, /dev, /sys, /.airlock", () => {
    assert.deepEqual(summary(rules({ denyWrite: ['/proc', '/dev/shm', '/sys', '/.airlock/host'], denyRead: ['/proc/1'] })), []);
  });
});

describe('filesystem mount sources', () => {
  const root = mkdtempSync(join(tmpdir(), 'airlock-rule-mounts-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  let count = 0;
  const layoutFor = (): MountSourceLayout => {
    const base = join(root, String(count++));
    const layout = {
      workspaceHostDir: join(base, 'disk', 'workspace'),
      rootfsView: join(base, 'rootfs'),
      diskDir: join(base, 'disk'),
      stateDir: join(base, 'state'),
    };
    for (const dir of [layout.workspaceHostDir, join(layout.rootfsView, 'etc'), join(layout.rootfsView, 'opt', 'data'), layout.stateDir])
      mkdirSync(dir, { recursive: true });
    writeFileSync(join(layout.rootfsView, 'etc', 'shadow'), 'image secret');
    return layout;
  };

  it('makes a missing rule path an empty directory on the session disk, and binds it read-only', async () => {
    const layout = layoutFor();
    const resolved = await resolveRuleMounts(planFilesystemMounts(rules({ readOnly: ['/workspace/a/keep'] })), layout);
    assert.ok(statSync(join(layout.workspaceHostDir, 'a', 'keep')).isDirectory(), 'the mount point exists on the disk');
    assert.deepEqual(resolved.mounts, [
      { destination: '/workspace/a', type: 'bind', source: join(layout.workspaceHostDir, 'a'), options: ['rbind', 'rw'] },
      { destination: '/workspace/a/keep', type: 'bind', source: join(layout.workspaceHostDir, 'a', 'keep'), options: ['rbind', 'ro'] },
    ]);
    assert.deepEqual(resolved.skipped, []);
  });

  it('masks a directory with an empty mode-0 tmpfs and a file with an empty unreadable file', async () => {
    const layout = layoutFor();
    writeFileSync(join(layout.workspaceHostDir, '.env'), 'TOKEN=1');
    const resolved = await resolveRuleMounts(planFilesystemMounts(rules({ denyRead: ['/workspace/.env', '/workspace/private', '/etc/shadow'] })), layout);
    const byDestination = new Map(resolved.mounts.map((mount) => [mount.destination, mount]));
    assert.equal(byDestination.get('/workspace/private')?.type, 'tmpfs');
    assert.ok(byDestination.get('/workspace/private')?.options?.includes('mode=000'));
    for (const file of ['/workspace/.env', '/etc/shadow']) {
      const mask = byDestination.get(file);
      assert.equal(mask?.type, 'bind', file);
      assert.deepEqual(mask?.options, ['rbind', 'ro']);
      assert.equal(statSync(mask?.source ?? '').size, 0, `${file} is masked by an empty file`);
      assert.equal(statSync(mask?.source ?? '').mode & 0o777, 0);
    }
  });

  it('refuses a rule path through a symlink on the session disk: runsc would follow it on the host', async () => {
    const layout = layoutFor();
    symlinkSync('/', join(layout.workspaceHostDir, 'a'));
    await assert.rejects(resolveRuleMounts(planFilesystemMounts(rules({ readOnly: ['/workspace/a/etc'] })), layout), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'INVALID_STATE');
      assert.match(error.message, /symbolic link/);
      return true;
    });
  });

  it('skips, with the reason, an image path that is missing or crosses a symlink; a writable one comes from the disk', async () => {
    const layout = layoutFor();
    symlinkSync('etc', join(layout.rootfsView, 'etc-link'));
    const skipping = await resolveRuleMounts(planFilesystemMounts(rules({ denyWrite: ['/srv/none', '/etc-link/x', '/etc'] })), layout);
    assert.deepEqual(
      skipping.skipped.map((skip) => skip.destination).sort(),
      ['/etc-link/x', '/etc/machine-id', '/srv/none'],
      'without its layer of mount points, the view lacks them',
    );
    assert.deepEqual(
      skipping.mounts,
      [{ destination: '/etc', type: 'bind', source: join(layout.rootfsView, 'etc'), options: ['rbind', 'ro'] }],
      'an image path is bound from the read-only view',
    );
    const resolved = await resolveRuleMounts(planFilesystemMounts(rules({ allowWrite: ['/workspace', '/opt/data'] })), layout);
    assert.deepEqual(resolved.mounts, [
      { destination: '/opt/data', type: 'bind', source: join(layout.diskDir, 'writable', 'opt', 'data'), options: ['rbind', 'rw'] },
    ]);
    assert.deepEqual(resolved.tmp?.options?.includes('ro'), true, '/tmp is not in allowWrite: its own read-only tmpfs');
  });
});

describe('mount points the image lacks', () => {
  it("are empty directories (and the identity file) in a layer of the sandbox's own; paths through a symlink get none", async () => {
    const root = mkdtempSync(join(tmpdir(), 'airlock-mount-points-'));
    try {
      const image = join(root, 'image');
      mkdirSync(join(image, 'etc'), { recursive: true });
      symlinkSync('etc', join(image, 'etc-link'));
      const prepared = await prepareRules(rules({ denyWrite: ['/opt/app', '/etc-link/x', '/etc'] }), image, join(root, 'state'));
      assert.equal(prepared?.mountPointsDir, join(root, 'state', 'mount-points'));
      assert.ok(statSync(join(root, 'state', 'mount-points', 'opt', 'app')).isDirectory());
      assert.ok(statSync(join(root, 'state', 'mount-points', 'etc', 'machine-id')).isFile(), 'the image has no machine-id: an empty one to mount over');
      assert.throws(() => statSync(join(root, 'state', 'mount-points', 'etc-link')), "nothing shadows the image's symlink");
      assert.ok(statSync(join(root, 'state', 'airlock-rule-mounts-v1')).isFile(), 'the marker that checkpoints carry');
      const everything = await prepareRules(rules({ denyWrite: ['/etc/ssl'] }), image, join(root, 'state2'));
      assert.equal(everything?.mountPointsDir, join(root, 'state2', 'mount-points'));
      mkdirSync(join(image, 'srv'));
      assert.equal((await prepareRules(rules({ denyWrite: ['/srv'] }), image, join(root, 'state3')))?.mountPointsDir, undefined, 'the image has it: no layer');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('OCI spec with rule mounts', () => {
  const base = {
    sandboxId: 'airlock-s-g1',
    rootPath: '/state/rootfs',
    workspaceHostDir: '/disk/workspace',
    agentHostPath: '/host/airlock-agent',
    agentSocketDir: '/state/agent',
    hostname: 's',
    env: {},
    resources: { cpus: 1, memoryMb: 256, maxProcesses: 64, diskMb: 1024 },
    processLimit: 72,
  };
  type Spec = {
    root: { readonly: boolean };
    mounts: { destination: string; options?: string[] }[];
    linux: { seccomp?: unknown };
  };

  it('without rules: a writable root and /workspace, and no seccomp section (the agent installs its own filter)', () => {
    const spec = buildOciSpec(base) as unknown as Spec;
    assert.equal(spec.root.readonly, false);
    assert.deepEqual(spec.mounts.find((mount) => mount.destination === '/workspace')?.options, ['rbind', 'rw']);
    assert.equal(spec.linux.seccomp, undefined, 'a runsc filter would refuse the agent its bounded /proc mount');
  });

  it('with rules: the mounts sit after /workspace and before the network files, in plan order', async () => {
    const root = mkdtempSync(join(tmpdir(), 'airlock-rule-spec-'));
    try {
      const layout = { workspaceHostDir: join(root, 'workspace'), rootfsView: join(root, 'rootfs'), diskDir: root, stateDir: join(root, 'state') };
      for (const dir of [layout.workspaceHostDir, join(layout.rootfsView, 'etc'), layout.stateDir]) mkdirSync(dir, { recursive: true });
      writeFileSync(join(layout.rootfsView, 'etc', 'machine-id'), '');
      const prepared = await prepareRules(
        rules({ denyWrite: ['/etc'], allowWrite: ['/workspace', '/tmp'], readOnly: ['/workspace/keep'] }),
        layout.rootfsView,
        layout.stateDir,
      );
      assert.ok(prepared);
      const ruleMounts = await ruleMountsOf(prepared, layout);
      const spec = buildOciSpec({ ...base, rules: ruleMounts, files: [{ hostPath: '/host/resolv.conf', sandboxPath: '/etc/resolv.conf' }] }) as unknown as Spec;
      assert.equal(spec.root.readonly, true, 'allowWrite without / makes the root read-only');
      const destinations = spec.mounts.map((mount) => mount.destination);
      assert.deepEqual(destinations.slice(destinations.indexOf('/workspace')), [
        '/workspace',
        '/.airlock/bin/airlock-agent',
        '/.airlock/host',
        '/workspace/keep',
        '/etc/machine-id',
        '/etc/resolv.conf',
      ]);
      assert.equal(await prepareRules(NONE, layout.rootfsView, layout.stateDir), undefined, 'no rules: nothing to add');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
