/**
 * Hostile suite: path escapes. Every route a path can take (the files API,
 * a command, a per-call sandbox) with `..` (absolute, relative, encoded),
 * symlinks (absolute, relative, chains, loops, into /proc), /proc/self/root
 * and /proc/1/cwd, hard links, and long and odd names, must end inside the
 * session, and a contract's filesystem rules must hold through symlinked
 * parents.
 *
 * The target is a marker that exists only on the host, in a temp dir of its
 * own. The session also holds a decoy at the same absolute path: a route
 * that resolves the path must land on the decoy (the positive control: the
 * probe did resolve something), never on the host's file; a second host
 * file has no decoy, so every route to it must fail.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { TestInstallation } from '../support/test-installation.js';
import { HostileApi, hostMarker, needle, readOnlyBindSources, sha256OfFile, type Answer, type HostMarker } from '../support/hostile-kit.js';


describe('hostile: path escapes end inside the session, and filesystem rules hold through symlinks', { timeout: 600_000 }, () => {
  let installation: TestInstallation;
  let api: HostileApi;
  let marker: HostMarker;
  /** a host file with no decoy in the session */
  let hostOnly = '';
  /** the session's own file at the marker's path */
  const decoy = needle('decoy-in-the-session');
  const control = needle('control');
  const secret = needle('denied-secret');
  /** a session with the default contract */
  let open = '';
  /** a session whose contract denies reading /workspace/secret and writing /workspace/locked */
  let ruled = '';

  const hostWorkspace = (sessionId: string): string => join(installation.dataDir, 'disks', sessionId, 'mnt', 'workspace');
  const read = (sessionId: string, path: string): Promise<Answer> => api.tool(sessionId, 'files.read', { path });
  /** Fails when an answer holds the host's marker or the denied secret. */
  const assertNoLeak = (answer: Answer | string, what: string): void => {
    const text = typeof answer === 'string' ? answer : JSON.stringify(answer.body);
    assert.ok(!text.includes(marker.content), `${what} reached the host-only marker: ${text.slice(0, 300)}`);
    assert.ok(!text.includes(secret.value), `${what} returned the denied secret: ${text.slice(0, 300)}`);
  };
  /** The path must resolve to the session's decoy. */
  const assertDecoy = (answer: Answer, what: string): void => {
    assertNoLeak(answer, what);
    assert.equal(answer.code, 'ok', `${what}: ${answer.code} ${answer.message}`);
    assert.equal(answer.result['content'], decoy.value, `${what} resolved inside the session, to its decoy`);
  };
  /** The path must not exist for the session. */
  const assertNotFound = (answer: Answer, what: string): void => {
    assertNoLeak(answer, what);
    assert.equal(answer.code, 'FILE_NOT_FOUND', `${what}: ${answer.code} ${answer.message}`);
  };

  before(async () => {
    installation = await TestInstallation.start();
    api = new HostileApi(installation);
    marker = hostMarker();
    hostOnly = join(marker.dir, 'host-only.txt');
    writeFileSync(hostOnly, marker.content);
    [open, ruled] = await Promise.all([
      api.createSession({ version: 1, idle: { keepAwake: true } }),
      api.createSession({ version: 1, idle: { keepAwake: true }, filesystem: { denyRead: ['/workspace/secret'], denyWrite: ['/workspace/locked'] } }),
    ]);
    await api.sh(open, `mkdir -p '${marker.dir}' /workspace/links && printf %s '${decoy.halves.join("' '")}' | tr -d ' ' > '${marker.path}' && printf %s '${control.value}' > /workspace/control.txt`);
    // The denied secret and the locked file are put in place from the host, as a user's checkout would be: the
    // session's own mounts refuse it both (the rules hold from the machine's start).
    const secretDir = join(hostWorkspace(ruled), 'secret');
    mkdirSync(secretDir, { recursive: true });
    writeFileSync(join(secretDir, 'key'), secret.value);
    mkdirSync(join(hostWorkspace(ruled), 'locked'), { recursive: true });
    writeFileSync(join(hostWorkspace(ruled), 'locked', 'file'), 'keep');
    const refused = await api.run(ruled, 'printf gone > /workspace/locked/file; cat /workspace/secret/key');
    assert.notEqual(refused.exitCode, 0, 'control: the machine itself refuses the locked file and hides the secret');
    assertNoLeak(refused.stdout + refused.stderr, 'cat of the denied secret');
    await api.sh(ruled, 'mkdir -p /workspace/pub && printf public > /workspace/pub/readme');
    assert.equal((await read(ruled, '/workspace/secret/key')).code, 'POLICY_DENIED', 'control: the rule is in force for the plain path');
  });

  after(async () => {
    marker?.dispose();
    await installation?.destroy();
  });

  it('an absolute host path names the session\'s own file, never the host\'s', async () => {
    assertDecoy(await read(open, marker.path), `files.read ${marker.path}`);
    assertNotFound(await read(open, hostOnly), `files.read ${hostOnly}`);
    assertNotFound(await api.tool(open, 'files.stat', { path: hostOnly }), `files.stat ${hostOnly}`);
    const listed = await api.tool(open, 'files.list', { path: marker.dir });
    assert.deepEqual((listed.result['entries'] as { name: string }[]).map((entry) => entry.name), ['marker.txt'], 'the listing is of the session\'s dir, not the host\'s');
  });

  it('`..` in an absolute path stops at the session\'s root', async () => {
    assertDecoy(await read(open, `/workspace/../../../../..${marker.path}`), 'files.read /workspace/../../..');
    assertNotFound(await read(open, `${'/..'.repeat(30)}${hostOnly}`), 'files.read /.. x30');
    assertNotFound(await read(open, `/workspace/links/../../../../../..${hostOnly}`), 'files.read through the links dir');
  });

  it('`..` in a relative path stops at the session\'s root', async () => {
    assertDecoy(await read(open, `${'../'.repeat(12)}${marker.path.slice(1)}`), 'files.read ../ x12 to the marker');
    assertNotFound(await read(open, `links/${'../'.repeat(12)}${hostOnly.slice(1)}`), 'files.read links/../ x12');
  });

  it('an encoded `..` is a literal name, never a parent', async () => {
    const encoded = ['%2e%2e', '..%2f..', '%252e%252e', '\u2025', '\uff0e\uff0e', '.%2e'];
    for (const dots of encoded) {
      assertNotFound(await read(open, `/workspace/${dots}/${dots}/${dots}/${dots}${hostOnly}`), `files.read through ${JSON.stringify(dots)}`);
    }
    // The positive control: such a name is an ordinary directory inside the workspace.
    assert.equal((await api.tool(open, 'files.write', { path: '/workspace/%2e%2e/literal.txt', content: 'x' })).code, 'ok');
    const names = ((await api.tool(open, 'files.list', { path: '/workspace' })).result['entries'] as { name: string }[]).map((entry) => entry.name);
    assert.ok(names.includes('%2e%2e'), `a dir literally named %2e%2e is in the workspace: ${names.join(' ')}`);
    // And in the URL: an encoded `..` in a session id reaches no other route.
    const viaUrl = await api.request('POST', `/v1/sessions/${open}%2F..%2F..%2Fapprovals/tools/files.read`, { path: hostOnly });
    assert.ok(viaUrl.status === 404 || viaUrl.status === 400, `${viaUrl.status} ${viaUrl.code}`);
    assertNoLeak(viaUrl, 'an encoded .. in the URL');
  });

  it('an absolute symlink to a host path resolves inside the session: files API, exec and a per-call sandbox', async () => {
    await api.sh(open, `cd /workspace/links && ln -sfn '${marker.path}' abs-marker && ln -sfn '${hostOnly}' abs-host-only && ln -sfn '${marker.dir}' abs-dir && ln -sfn /workspace/control.txt abs-control`);
    assertDecoy(await read(open, '/workspace/links/abs-marker'), 'files.read abs-marker');
    assertNotFound(await read(open, '/workspace/links/abs-host-only'), 'files.read abs-host-only');
    assertNotFound(await read(open, '/workspace/links/abs-dir/host-only.txt'), 'files.read abs-dir/host-only.txt');
    // The decoy lives in the machine's root layer, which a per-call sandbox does not share; the workspace it does.
    const expected = { machine: `${decoy.value}\n${control.value}\ndone\n`, perCall: `\n${control.value}\ndone\n` };
    for (const ephemeral of [false, true]) {
      const catted = await api.run(open, 'cd /workspace/links && cat abs-marker; echo; cat abs-control; echo; cat abs-host-only abs-dir/host-only.txt; echo done', { ephemeral });
      assertNoLeak(catted.stdout + catted.stderr, `cat through the links (${ephemeral ? 'per-call sandbox' : 'machine'})`);
      assert.equal(catted.stdout, ephemeral ? expected.perCall : expected.machine, `only the session's own files read (${ephemeral ? 'per-call sandbox' : 'machine'})`);
    }
  });

  it('a relative symlink that resolves to the host marker on the host reaches nothing from the session', async () => {
    const linksOnHost = join(hostWorkspace(open), 'links');
    const target = relative(linksOnHost, hostOnly);
    await api.sh(open, `cd /workspace/links && ln -sfn '${target}' rel-host-only`);
    assert.equal(realpathSync(join(linksOnHost, 'rel-host-only')), hostOnly, 'the attack is real: on the host this link resolves to the marker');
    assertNotFound(await read(open, '/workspace/links/rel-host-only'), `files.read rel-host-only -> ${target}`);
    const catted = await api.run(open, 'cat /workspace/links/rel-host-only');
    assert.notEqual(catted.exitCode, 0);
    assertNoLeak(catted.stdout + catted.stderr, 'cat rel-host-only');
  });

  it('a chain of symlinks ends inside the session', async () => {
    const chain = Array.from({ length: 8 }, (_, index) => `ln -sfn chain-${index + 1} chain-${index}`).join(' && ');
    await api.sh(open, `cd /workspace/links && ${chain} && ln -sfn '${hostOnly}' chain-8 && ln -sfn ok-1 ok-0 && ln -sfn ../control.txt ok-1`);
    assertNotFound(await read(open, '/workspace/links/chain-0'), 'files.read of an 8-link chain to the host-only path');
    assert.equal((await read(open, '/workspace/links/ok-0')).result['content'], control.value, 'control: a chain to the session\'s own file reads');
  });

  it('a symlink loop fails cleanly with a 4xx, for reads, stats and listings', async () => {
    await api.sh(open, 'cd /workspace/links && ln -sfn loop-b loop-a && ln -sfn loop-a loop-b && ln -sfn self self');
    for (const path of ['/workspace/links/loop-a', '/workspace/links/self', '/workspace/links/loop-a/x']) {
      for (const tool of ['files.read', 'files.list']) {
        const answer = await api.tool(open, tool, { path });
        assert.ok(answer.status >= 400 && answer.status < 500, `${tool} ${path}: ${answer.status} ${answer.code} ${answer.message}`);
      }
    }
    const stat = await api.tool(open, 'files.stat', { path: '/workspace/links/self' });
    assert.equal(stat.result['type'], 'symlink', 'control: stat sees the loop itself without following it');
  });

  it('symlinks into /proc reach only the session\'s own processes', async () => {
    await api.sh(open, `cd /workspace/links && ln -sfn '/proc/1/root${hostOnly}' proc-root && ln -sfn '/proc/self/root${hostOnly}' proc-self && ln -sfn '/proc/1/cwd/${'../'.repeat(8)}${hostOnly.slice(1)}' proc-cwd && ln -sfn /proc/1/environ proc-environ`);
    for (const name of ['proc-root', 'proc-self', 'proc-cwd']) assertNotFound(await read(open, `/workspace/links/${name}`), `files.read ${name}`);
    const environ = await read(open, '/workspace/links/proc-environ');
    assertNoLeak(environ, 'files.read /proc/1/environ');
    assert.ok(!JSON.stringify(environ.body).includes(installation.token), 'the environment of the session\'s init holds no API token');
  });

  it('/proc/self/root, /proc/1/root and /proc/1/cwd in the files API reach nothing of the host', async () => {
    const paths = [`/proc/self/root${hostOnly}`, `/proc/1/root${hostOnly}`, `/proc/1/cwd/${'../'.repeat(8)}${hostOnly.slice(1)}`, `/proc/thread-self/root${hostOnly}`, `/proc/1/root/../../..${hostOnly}`];
    for (const path of paths) assertNotFound(await read(open, path), `files.read ${path}`);
    const ownControl = await read(open, '/proc/self/root/workspace/control.txt');
    assertNoLeak(ownControl, 'files.read /proc/self/root/workspace/control.txt');
  });

  it('the host\'s data dir, database, disk image and token file are not in the session\'s view', async () => {
    const hostPaths = [join(installation.dataDir, 'airlock.db'), join(installation.dataDir, 'token'), join(installation.dataDir, 'disks', open, 'disk.ext4'), join(installation.dataDir, 'disks', ruled, 'mnt', 'workspace', 'secret', 'key')];
    for (const path of hostPaths) assertNotFound(await read(open, path), `files.read ${path}`);
    assertNotFound(await api.tool(open, 'files.list', { path: installation.dataDir }), `files.list ${installation.dataDir}`);
    const listed = await api.run(open, `ls '${installation.dataDir}'; cat '${hostPaths[3]}'`);
    assert.notEqual(listed.exitCode, 0);
    assertNoLeak(listed.stdout + listed.stderr, 'ls of the data dir');
  });

  it('hard links reach neither the host nor the image nor the toolbox', async () => {
    const image = join(process.env['AIRLOCK_TEST_IMAGES_DIR'] ?? '/var/tmp/airlock-test/images', 'debian-bookworm', 'rootfs', 'etc', 'passwd');
    const toolbox = (await readOnlyBindSources(installation, api, open)).find((mount) => mount.destination.startsWith('/.airlock/'));
    assert.ok(toolbox, 'the sandbox has a read-only toolbox under /.airlock');
    const before = { passwd: sha256OfFile(image), toolbox: sha256OfFile(toolbox.source) };
    const linked = await api.run(open, `cd /workspace && ln '${hostOnly}' hard-host; echo "host:$?"; ln '${toolbox.destination}' hard-toolbox; echo "toolbox:$?"; ln /etc/passwd hard-passwd && echo 'hardlinked::0:0::/:/bin/sh' >> hard-passwd; echo "passwd:$?"; echo pwned >> hard-toolbox; cat hard-host 2>&1; true`);
    assertNoLeak(linked.stdout + linked.stderr, 'hard links');
    assert.match(linked.stdout, /host:[1-9]/, 'a hard link to a host-only path fails');
    assert.match(linked.stdout, /toolbox:[1-9]/, 'a hard link to the read-only toolbox fails');
    assert.equal(sha256OfFile(image), before.passwd, 'the shared image is unchanged on the host');
    assert.equal(sha256OfFile(toolbox.source), before.toolbox, `the toolbox on the host (${toolbox.source}) is unchanged`);
  });

  it('a hard link to a denyRead file from an allowed path does not read the secret', async () => {
    await api.run(ruled, 'ln /workspace/secret/key /workspace/pub/hard-key');
    const answer = await read(ruled, '/workspace/pub/hard-key');
    assertNoLeak(answer, 'files.read of a hard link to the denied file');
  });

  it('a 255-byte name works and a 256-byte name is refused, in bytes, not characters', async () => {
    for (const name of ['a'.repeat(255), `${'é'.repeat(127)}a`]) {
      assert.equal((await api.tool(open, 'files.write', { path: `/workspace/long/${name}`, content: 'long' })).code, 'ok', `${Buffer.byteLength(name)}-byte name`);
      assert.equal((await read(open, `/workspace/long/${name}`)).result['content'], 'long');
    }
    for (const name of ['a'.repeat(256), 'é'.repeat(128)]) {
      const answer = await api.tool(open, 'files.write', { path: `/workspace/long/${name}`, content: 'long' });
      assert.equal(answer.code, 'INVALID_ARGUMENTS', `${Buffer.byteLength(name)}-byte name: ${answer.message}`);
      assert.match(answer.message, /255/);
    }
    const listed = (await api.tool(open, 'files.list', { path: '/workspace/long' })).result['entries'] as { name: string }[];
    assert.equal(listed.length, 2);
  });

  it('a newline or the listing separator in a name cannot forge a listing entry', async () => {
    const forged = ['entry\nforged', 'directory|4096|0755|0|forged-dir', 'x\n..'];
    for (const name of forged) assert.equal((await api.tool(open, 'files.write', { path: `/workspace/odd/${name}`, content: name })).code, 'ok', JSON.stringify(name));
    const listed = (await api.tool(open, 'files.list', { path: '/workspace/odd' })).result['entries'] as { name: string; type: string }[];
    assert.deepEqual(listed.map((entry) => entry.name).sort(), [...forged].sort(), 'one entry per file, names exact');
    assert.ok(listed.every((entry) => entry.type === 'file'), `every entry is the file it is: ${JSON.stringify(listed)}`);
    for (const name of forged) assert.equal((await read(open, `/workspace/odd/${name}`)).result['content'], name);
  });

  it('a leading `-` is a file name, not an option, for write, read and remove', async () => {
    const names = ['-rf', '--help', '-n', '--no-preserve-root'];
    for (const name of names) assert.equal((await api.tool(open, 'files.write', { path: `/workspace/dash/${name}`, content: `dash ${name}` })).code, 'ok', name);
    await api.write(open, '/workspace/dash/bystander', 'still here');
    for (const name of names) assert.equal((await read(open, `/workspace/dash/${name}`)).result['content'], `dash ${name}`);
    assert.equal((await api.tool(open, 'files.remove', { path: '/workspace/dash/-rf' })).code, 'ok');
    const left = ((await api.tool(open, 'files.list', { path: '/workspace/dash' })).result['entries'] as { name: string }[]).map((entry) => entry.name).sort();
    assert.deepEqual(left, ['--help', '--no-preserve-root', '-n', 'bystander'].sort(), 'removing `-rf` removed that file only');
    assert.equal((await read(open, '/workspace/control.txt')).result['content'], control.value);
  });

  it('unicode names keep their exact bytes: NFC and NFD are two files, a fullwidth solidus is no separator', async () => {
    const names = ['\u00e9', 'e\u0301', '\u202egnp.exe', 'a\uff0fb', 'zero\u200bwidth'];
    for (const name of names) assert.equal((await api.tool(open, 'files.write', { path: `/workspace/uni/${name}`, content: `bytes ${Buffer.from(name).toString('hex')}` })).code, 'ok', JSON.stringify(name));
    for (const name of names) assert.equal((await read(open, `/workspace/uni/${name}`)).result['content'], `bytes ${Buffer.from(name).toString('hex')}`, JSON.stringify(name));
    const listed = ((await api.tool(open, 'files.list', { path: '/workspace/uni' })).result['entries'] as { name: string }[]).map((entry) => entry.name).sort();
    assert.deepEqual(listed, [...names].sort());
  });

  it('`.` and `..` as names cannot overwrite or remove the workspace or the root', async () => {
    for (const path of ['/workspace/.', '/workspace/..', '/workspace/odd/..']) {
      const written = await api.tool(open, 'files.write', { path, content: 'clobber' });
      assert.equal(written.code, 'IS_A_DIRECTORY', `files.write ${path}: ${written.code}`);
    }
    for (const path of ['/workspace/.', '/workspace/..', '/workspace/odd/..', '/workspace/odd/../..']) {
      const removed = await api.tool(open, 'files.remove', { path, recursive: true });
      assert.equal(removed.code, 'INVALID_ARGUMENTS', `files.remove ${path}: ${removed.code} ${removed.message}`);
    }
    assert.equal((await read(open, '/workspace/control.txt')).result['content'], control.value, 'the workspace is intact');
    assert.equal((await api.tool(open, 'files.mkdir', { path: '/workspace/...' })).code, 'ok', 'control: `...` is an ordinary name');
  });

  it('denyWrite holds through symlinked parents, chains of them and relative links', async () => {
    await api.sh(ruled, 'cd /workspace && ln -sfn /workspace/locked alias && ln -sfn alias alias2 && ln -sfn ../locked pub/up');
    for (const path of ['/workspace/alias/new', '/workspace/alias2/new', '/workspace/pub/up/new', '/workspace/alias/file', 'pub/up/file', '/proc/self/root/workspace/alias/file']) {
      const written = await api.tool(ruled, 'files.write', { path, content: 'clobber' });
      assert.equal(written.code, 'POLICY_DENIED', `files.write ${path}: ${written.code} ${written.message}`);
      assert.match(written.message, /denyWrite/);
    }
    assert.equal((await api.tool(ruled, 'files.mkdir', { path: '/workspace/alias2/sub' })).code, 'POLICY_DENIED');
    assert.equal((await api.tool(ruled, 'files.edit', { path: '/workspace/pub/up/file', oldString: 'keep', newString: 'gone' })).code, 'POLICY_DENIED');
    assert.equal((await api.tool(ruled, 'files.remove', { path: '/workspace/alias/file' })).code, 'POLICY_DENIED');
    assert.equal(readFileSync(join(hostWorkspace(ruled), 'locked', 'file'), 'utf8'), 'keep', 'the locked file is unchanged on the session\'s disk');
    assert.equal((await api.tool(ruled, 'files.write', { path: '/workspace/pub/../pub/ok.txt', content: 'fine' })).code, 'ok', 'control: writes elsewhere pass');
  });

  it('denyRead holds through symlinked parents, links to the file and /proc paths', async () => {
    await api.sh(ruled, 'cd /workspace && ln -sfn /workspace/secret pub/secret-dir && ln -sfn ../secret/key pub/key-link && ln -sfn /proc/self/root/workspace/secret/key pub/proc-link');
    for (const path of ['/workspace/pub/secret-dir/key', '/workspace/pub/key-link', '/workspace/pub/proc-link', '/proc/self/root/workspace/secret/key', '/proc/1/root/workspace/secret/key', '/workspace/pub/../secret/key']) {
      const answer = await read(ruled, path);
      assertNoLeak(answer, `files.read ${path}`);
      assert.ok(answer.code === 'POLICY_DENIED' || answer.code === 'FILE_NOT_FOUND', `files.read ${path}: ${answer.code}`);
    }
    const listed = await api.tool(ruled, 'files.list', { path: '/workspace/pub/secret-dir' });
    assert.equal(listed.code, 'POLICY_DENIED', `files.list through a link to the denied dir: ${listed.code}`);
    assert.equal((await read(ruled, '/workspace/pub/readme')).result['content'], 'public', 'control: reads elsewhere pass');
  });

  it('removing a symlink that points into a denyWrite dir removes the link, not what it points to', async () => {
    await api.sh(ruled, 'ln -sfn /workspace/locked /workspace/pub/to-locked');
    assert.equal((await api.tool(ruled, 'files.remove', { path: '/workspace/pub/to-locked', recursive: true })).code, 'ok');
    assert.equal(readFileSync(join(hostWorkspace(ruled), 'locked', 'file'), 'utf8'), 'keep');
    const stat = await api.tool(ruled, 'files.stat', { path: '/workspace/pub/to-locked' });
    assert.equal(stat.code, 'FILE_NOT_FOUND', 'the link itself is gone');
  });

  it('a working directory outside the workspace, or through a link to a host path, is the session\'s', async () => {
    const inDecoyDir = await api.tool(open, 'exec', { command: 'pwd; cat marker.txt; echo; cat host-only.txt', cwd: marker.dir });
    assertNoLeak(inDecoyDir, 'exec with cwd = the marker dir');
    assert.equal(inDecoyDir.result['stdout'], `${marker.dir}\n${decoy.value}\n`, 'the cwd is the session\'s dir of that name');
    await api.sh(open, `ln -sfn '${marker.dir}' /workspace/cwd-link`);
    const throughLink = await api.tool(open, 'exec', { command: 'cat host-only.txt', cwd: '/workspace/cwd-link' });
    assertNoLeak(throughLink, 'exec with cwd through a link');
    const missing = await api.tool(open, 'exec', { command: 'pwd', cwd: `${dirname(hostOnly)}-missing` });
    assertNoLeak(missing, 'exec with a missing cwd');
    assert.ok(missing.code !== 'ok' || missing.result['exitCode'] !== 0, 'a cwd that exists only on the host is no cwd in the session');
  });
});
