/**
 * Issue 23: E2B code runs against Airlock unchanged, through the real `e2b`
 * client from npm, a real server and gVisor: commands (output, exit codes,
 * background + kill), files (up, down, list, make, remove), list filters,
 * pause and resume, two tenants' keys, a denied and a held command (approved
 * through the CLI), and the audit of each call.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { CommandExitError, NotFoundError, Sandbox, SandboxNotFoundError } from 'e2b';
import { TestInstallation } from '../support/test-installation.js';

const CONTRACT = fileURLToPath(new URL('../../../../../examples/contracts/no-rm-approve-tar.json', import.meta.url));

async function waitFor<T>(probe: () => T | undefined, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('the E2B-compatible API, with the real e2b client', () => {
  let installation: TestInstallation;
  let acmeKey: string;
  let betaKey: string;
  let sandbox: Sandbox;
  let connection: { apiUrl: string; sandboxUrl: string };

  before(async () => {
    installation = await TestInstallation.start();
    connection = { apiUrl: `${installation.url}/e2b`, sandboxUrl: `${installation.url}/e2b` };
    const key = (tenant: string) => {
      const made = installation.cli(['tokens', 'create', '--tenant', tenant, '--role', 'operator', '--e2b', '--json']);
      assert.equal(made.code, 0, made.stderr);
      return (JSON.parse(made.stdout) as { token: string }).token;
    };
    acmeKey = key('acme');
    betaKey = key('beta');
    assert.match(acmeKey, /^e2b_[0-9a-f]{40}$/);
    const set = installation.cli(['templates', 'set', 'guarded', '--image', 'debian-bookworm', '--contract', CONTRACT]);
    assert.equal(set.code, 0, set.stderr);
    assert.match(installation.cli(['templates', 'ls']).stdout, /guarded\s+debian-bookworm\s+yes/);
    sandbox = await Sandbox.create('guarded', { apiKey: acmeKey, ...connection, metadata: { suite: 'e2b', run: '1' }, timeoutMs: 600_000 });
  });
  after(async () => {
    await installation?.destroy();
  });

  it('runs commands: output, a failing exit code as CommandExitError', async () => {
    const done = await sandbox.commands.run('echo hello; echo oops >&2');
    assert.equal(done.exitCode, 0);
    assert.equal(done.stdout, 'hello\n');
    assert.equal(done.stderr, 'oops\n');
    await assert.rejects(sandbox.commands.run('exit 3'), (error: unknown) => error instanceof CommandExitError && error.exitCode === 3);
    const env = await sandbox.commands.run('echo $GREETING', { envs: { GREETING: 'hi' } });
    assert.equal(env.stdout, 'hi\n');
  });

  it('starts a command in the background, lists it, and kills it', async () => {
    const handle = await sandbox.commands.run('sleep 600', { background: true });
    assert.ok(handle.pid > 0);
    const listed = await sandbox.commands.list();
    assert.ok(listed.some((process) => process.pid === handle.pid));
    // Another client connects to the running command by its pid.
    const again = await sandbox.commands.connect(handle.pid);
    assert.equal(again.pid, handle.pid);
    assert.equal(await sandbox.commands.kill(handle.pid), true);
    await assert.rejects(handle.wait());
  });

  it('gives a command started with stdin its input once stdin is closed', async () => {
    const handle = await sandbox.commands.run('tr a-z A-Z', { background: true, stdin: true });
    await sandbox.commands.sendStdin(handle.pid, 'hello ');
    await sandbox.commands.sendStdin(handle.pid, 'stdin\n');
    await sandbox.commands.closeStdin(handle.pid);
    const done = await handle.wait();
    assert.equal(done.stdout, 'HELLO STDIN\n');
  });

  it('writes, reads, lists, makes and removes files', async () => {
    await sandbox.files.write('notes/a.txt', 'first file');
    assert.equal(await sandbox.files.read('notes/a.txt'), 'first file');
    assert.equal(await sandbox.files.makeDir('notes/sub'), true);
    const listed = await sandbox.files.list('notes');
    assert.deepEqual(listed.map((entry) => `${entry.name}:${entry.type}`).sort(), ['a.txt:file', 'sub:dir']);
    assert.equal(await sandbox.files.exists('/workspace/notes/a.txt'), true);
    assert.equal((await sandbox.commands.run('cat notes/a.txt', { cwd: '/workspace' })).stdout, 'first file');
    await sandbox.files.write([
      { path: 'notes/sub/b.txt', data: 'b' },
      { path: 'notes/sub/c.txt', data: new Uint8Array([0, 1, 2, 255]).buffer },
    ]);
    assert.deepEqual([...(await sandbox.files.read('notes/sub/c.txt', { format: 'bytes' }))], [0, 1, 2, 255]);
    const deep = await sandbox.files.list('notes', { depth: 2 });
    assert.deepEqual(deep.map((entry) => entry.path).sort(), [
      '/workspace/notes/a.txt',
      '/workspace/notes/sub',
      '/workspace/notes/sub/b.txt',
      '/workspace/notes/sub/c.txt',
    ]);
    const info = await sandbox.files.getInfo('notes/a.txt');
    assert.equal(info.size, 'first file'.length);
    assert.equal(info.type, 'file');
    await sandbox.files.rename('notes/a.txt', 'notes/renamed.txt');
    assert.equal(await sandbox.files.read('notes/renamed.txt'), 'first file');
    await sandbox.files.remove('notes/renamed.txt');
    assert.equal(await sandbox.files.exists('notes/renamed.txt'), false);
    await assert.rejects(
      sandbox.files.read('notes/missing.txt'),
      (error: unknown) => error instanceof NotFoundError || /not found|FILE_NOT_FOUND/i.test(String(error)),
    );
  });

  it("ends a command the policy denies as the SDK expects: exit 126, the policy's reason on stderr, nothing run", async () => {
    await sandbox.files.write('keep', 'precious');
    await assert.rejects(sandbox.commands.run('rm -f /workspace/keep'), (error: unknown) => {
      assert.ok(error instanceof CommandExitError);
      assert.equal(error.exitCode, 126);
      assert.match(error.stderr, /POLICY_DENIED/);
      return true;
    });
    assert.equal(await sandbox.files.read('keep'), 'precious');
  });

  it('holds a command for a human: its approval id on stderr, it runs once approved through the CLI', async () => {
    const running = sandbox.commands.run('tar cf /tmp/keep.tar -C /workspace keep && echo packed', { timeoutMs: 60_000 });
    const approval = await waitFor(() => {
      const pending = JSON.parse(installation.cli(['approvals', 'ls', '--json']).stdout) as { id: string; sessionId: string }[];
      return pending.find((entry) => entry.sessionId === sandbox.sandboxId);
    }, 'the approval to appear');
    const approved = installation.cli(['approvals', 'approve', approval.id]);
    assert.equal(approved.code, 0, approved.stderr);
    const done = await running;
    assert.equal(done.stdout, 'packed\n');
    assert.match(done.stderr, new RegExp(`held for approval ${approval.id}`));
  });

  it('lists by metadata and state; another tenant sees none of it', async () => {
    const mine = await Sandbox.list({ apiKey: acmeKey, ...connection, query: { metadata: { suite: 'e2b' }, state: ['running'] } }).nextItems();
    assert.deepEqual(
      mine.map((info) => info.sandboxId),
      [sandbox.sandboxId],
    );
    assert.equal(mine[0]?.metadata['run'], '1');
    assert.deepEqual(await Sandbox.list({ apiKey: acmeKey, ...connection, query: { metadata: { suite: 'other' } } }).nextItems(), []);
    assert.deepEqual(await Sandbox.list({ apiKey: betaKey, ...connection }).nextItems(), []);
    await assert.rejects(
      Sandbox.getInfo(sandbox.sandboxId, { apiKey: betaKey, ...connection }),
      (error: unknown) => error instanceof SandboxNotFoundError || error instanceof NotFoundError,
    );
    await assert.rejects(Sandbox.connect(sandbox.sandboxId, { apiKey: betaKey, ...connection }));
    // The guarded template's contract is of tenant acme: a beta key cannot make its sandboxes.
    await assert.rejects(Sandbox.create('guarded', { apiKey: betaKey, ...connection }));
    await assert.rejects(Sandbox.create('no-such-template', { apiKey: acmeKey, ...connection }), /not found/);
  });

  it('pauses (Airlock suspend) and resumes on connect, with its files and the processes running in the machine', async () => {
    // A process left running in the machine is kept with its memory.
    await sandbox.commands.run('nohup sleep 7777 >/dev/null 2>&1 &');
    assert.equal(await sandbox.pause(), true);
    assert.equal((await Sandbox.getInfo(sandbox.sandboxId, { apiKey: acmeKey, ...connection })).state, 'paused');
    const resumed = await Sandbox.connect(sandbox.sandboxId, { apiKey: acmeKey, ...connection });
    assert.equal((await Sandbox.getInfo(sandbox.sandboxId, { apiKey: acmeKey, ...connection })).state, 'running');
    assert.equal((await resumed.commands.run('cat /workspace/keep')).stdout, 'precious');
    const processes = (await resumed.commands.run('ps -eo args')).stdout;
    assert.match(processes, /sleep 7777/);
  });

  it('ends a sandbox at its timeout, or pauses it when it asked to (autoPause)', async () => {
    const options = { apiKey: betaKey, ...connection, timeoutMs: 2_000 };
    const ending = await Sandbox.create('base', options);
    const pausing = await Sandbox.create('base', { ...options, lifecycle: { onTimeout: 'pause' } });
    // Pages of one: the paginator follows x-next-token through both, then stops.
    const pages = Sandbox.list({ apiKey: betaKey, ...connection, limit: 1 });
    const seen: string[] = [];
    while (pages.hasNext) seen.push(...(await pages.nextItems()).map((info) => info.sandboxId));
    assert.deepEqual(seen.sort(), [ending.sandboxId, pausing.sandboxId].sort());
    const stateOf = async (id: string) =>
      (await Sandbox.list({ apiKey: betaKey, ...connection }).nextItems()).find((info) => info.sandboxId === id)?.state ?? 'gone';
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && ((await stateOf(ending.sandboxId)) !== 'gone' || (await stateOf(pausing.sandboxId)) !== 'paused')) {
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(await stateOf(ending.sandboxId), 'gone');
    assert.equal(await stateOf(pausing.sandboxId), 'paused');
    await Sandbox.kill(pausing.sandboxId, { apiKey: betaKey, ...connection });
  });

  it('records every call in the session audit, and kill ends the sandbox', async () => {
    const log = JSON.parse(installation.cli(['audit', sandbox.sandboxId, '--json']).stdout) as { type: string; data: Record<string, unknown> }[];
    const tools = log.filter((record) => record.type === 'tool-call.completed').map((record) => record.data['gen_ai.tool.name']);
    assert.ok(tools.includes('exec'));
    assert.ok(tools.includes('files.write'));
    assert.ok(tools.includes('files.read'));
    assert.ok(log.some((record) => record.type === 'tool-call.denied'));
    assert.ok(log.some((record) => record.type === 'approval.granted'));
    assert.equal(installation.cli(['audit', 'verify', sandbox.sandboxId]).code, 0);
    await sandbox.kill();
    assert.deepEqual(await Sandbox.list({ apiKey: acmeKey, ...connection }).nextItems(), []);
  });
});
