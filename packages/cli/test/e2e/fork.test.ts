/**
 * Issue 4's "done when", end to end: snapshots and fork through the CLI
 * (and the SDK for the many small calls) against a real server process and
 * the real gVisor driver.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, truncateSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Sandbox } from '@airlock/sdk';
import { TestInstallation, hostProcessesMatching } from '../support/test-installation.js';

/** Holds a counter in memory; on each request it counts and answers with fresh randomness. SIGUSR1 reseeds `random`. */
const STATE_PROGRAM = `import json, os, random, signal, time
counter = 0
random.seed(1234)
def reseed(signum, frame):
    random.seed(open('/tmp/fork-seed').read().strip())
signal.signal(signal.SIGUSR1, reseed)
open('/tmp/state.pid', 'w').write(str(os.getpid()))
while True:
    if os.path.exists('/tmp/req'):
        os.remove('/tmp/req')
        counter += 1
        json.dump({'counter': counter, 'urandom': os.urandom(16).hex(), 'random': random.random()}, open('/tmp/resp.tmp', 'w'))
        os.replace('/tmp/resp.tmp', '/tmp/resp')
    time.sleep(0.02)
`;

/** The documented on-fork pattern: hand the seed to the running program and tell it. */
const RESEED_HOOK = `#!/bin/sh
echo "$AIRLOCK_FORK_SEED" > /tmp/fork-seed
kill -USR1 "$(cat /tmp/state.pid)"
echo "branch=$AIRLOCK_BRANCH_INDEX parent=$AIRLOCK_PARENT_SESSION_ID"
`;

const ASK = 'rm -f /tmp/resp; touch /tmp/req; i=0; while [ ! -f /tmp/resp ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; cat /tmp/resp';
const IDENTITY = "hostname; cat /etc/machine-id 2>/dev/null || echo no-machine-id; head -c16 /dev/urandom | od -An -tx1 | tr -d ' \\n'";

interface Answer {
  counter: number;
  urandom: string;
  random: number;
}

async function ask(sandbox: Sandbox): Promise<Answer> {
  const result = await sandbox.commands.run(ASK);
  assert.equal(result.exitCode, 0, result.stderr);
  return JSON.parse(result.stdout) as Answer;
}

async function identity(sandbox: Sandbox): Promise<string[]> {
  const result = await sandbox.commands.run(IDENTITY);
  assert.equal(result.exitCode, 0, result.stderr);
  return result.stdout.trim().split('\n');
}

function distinct(values: unknown[]): number {
  return new Set(values.map((value) => JSON.stringify(value))).size;
}

describe('snapshots and fork on gVisor', () => {
  let installation: TestInstallation;
  let connection: { url: string; token: string };
  before(async () => {
    installation = await TestInstallation.start();
    connection = { url: installation.url, token: installation.token };
  });
  after(async () => {
    await installation?.destroy();
  });

  it('forks a running session into branches that keep its memory, processes and files but not its identity', async () => {
    const created = installation.cli(['sessions', 'create', '--json']);
    assert.equal(created.code, 0, created.stderr);
    const parent = await Sandbox.connect((JSON.parse(created.stdout) as { id: string }).id, connection);
    await parent.files.write('/workspace/state.py', STATE_PROGRAM);
    await parent.files.write('/workspace/task.txt', 'the prepared task\n');
    const setup = await parent.commands.run(
      `mkdir -p /etc/airlock/hooks/on-fork.d && cat > /etc/airlock/hooks/on-fork.d/50-reseed <<'EOF'\n${RESEED_HOOK}EOF\n` +
        'chmod +x /etc/airlock/hooks/on-fork.d/50-reseed && (nohup python3 /workspace/state.py >/dev/null 2>&1 &) && ' +
        'i=0; while [ ! -f /tmp/state.pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; cat /tmp/state.pid',
    );
    assert.equal(setup.exitCode, 0, setup.stderr);
    for (let i = 1; i <= 3; i++) assert.equal((await ask(parent)).counter, i);

    const forked = installation.cli(['sessions', 'fork', parent.id, '--count', '3', '--json']);
    assert.equal(forked.code, 0, forked.stderr);
    const views = JSON.parse(forked.stdout) as { id: string; state: string; lineage: { parentSessionId: string; snapshotId: string; branchIndex: number } }[];
    assert.deepEqual(
      views.map((v) => v.lineage.branchIndex),
      [0, 1, 2],
    );
    assert.ok(views.every((v) => v.state === 'running' && v.lineage.parentSessionId === parent.id));
    const branches = await Promise.all(views.map((v) => Sandbox.connect(v.id, connection)));
    const machines = [parent, ...branches];

    const answers = await Promise.all(machines.map(ask));
    assert.deepEqual(
      answers.map((a) => a.counter),
      [4, 4, 4, 4],
      'the process running at the snapshot kept its counter in every branch',
    );
    assert.equal(distinct(answers.map((a) => a.urandom)), 4, '/dev/urandom read by the running process differs per branch');
    assert.equal(distinct(answers.map((a) => a.random)), 4, 'the on-fork hook reseeded the running program differently in each branch');
    const identities = await Promise.all(machines.map(identity));
    for (const [line, what] of [
      [0, 'hostname'],
      [1, '/etc/machine-id'],
      [2, '16 bytes of /dev/urandom'],
    ] as const) {
      assert.equal(distinct(identities.map((id) => id[line])), 4, `${what} differs across branches and from the parent: ${JSON.stringify(identities)}`);
    }
    assert.equal(identities[1]?.[0], views[0]?.id.replace(/_/g, '-'), 'a branch is named after its session');

    for (const [index, view] of views.entries()) {
      const audit = await (branches[index] as Sandbox).audit();
      assert.equal(audit[0]?.type, 'session.forked', 'the branch history starts with the fork');
      assert.equal(audit[0]?.data['parentSessionId'], parent.id);
      assert.equal(audit[0]?.data['branchIndex'], view.lineage.branchIndex);
      const hook = audit.find((record) => record.type === 'hook.executed');
      assert.match(String(hook?.data['stdout']), new RegExp(`^branch=${view.lineage.branchIndex} parent=${parent.id}`));
      assert.equal(hook?.data['exitCode'], 0);
    }
    const shown = installation.cli(['sessions', 'get', views[2]?.id ?? '']);
    assert.match(shown.stdout, new RegExp(`lineage\\s+fork #2 of ${parent.id} at ${views[2]?.lineage.snapshotId}`), '`sessions get` shows the lineage');

    const [first, second] = branches as [Sandbox, Sandbox];
    assert.equal(await first.files.read('/workspace/task.txt'), 'the prepared task\n');
    assert.equal((await first.commands.run('echo mine > /workspace/only-first.txt && echo mine > /etc/only-first')).exitCode, 0);
    for (const other of [second, parent]) {
      const seen = await other.commands.run('[ -e /workspace/only-first.txt ] && echo workspace; [ -e /etc/only-first ] && echo root; true');
      assert.equal(seen.stdout, '', `a write in branch 0 is not visible in ${other.id}`);
    }

    // from a suspended session: its suspend image plus its disk
    assert.equal(installation.cli(['sessions', 'suspend', parent.id]).code, 0);
    const fromSuspended = installation.cli(['sessions', 'fork', parent.id, '--count', '1']);
    assert.equal(fromSuspended.code, 0, fromSuspended.stderr);
    const late = await Sandbox.connect(fromSuspended.stdout.trim(), connection);
    assert.equal((await ask(late)).counter, 5, 'the branch continues from the suspended memory');
    assert.equal((JSON.parse(installation.cli(['sessions', 'get', parent.id, '--json']).stdout) as { state: string }).state, 'suspended');

    for (const sandbox of [...branches, late]) await sandbox.kill();
    await parent.kill();
    for (const view of views) assert.deepEqual(hostProcessesMatching(view.id), [], `no process of ${view.id} is left`);
  });

  it('keeps snapshots as artifacts: listed, refused when altered or truncated, deleted on request', async () => {
    const id = installation.cli(['sessions', 'create']).stdout.trim();
    assert.equal(installation.cli(['exec', id, '--', 'sh', '-c', 'echo kept > /workspace/kept.txt']).code, 0);
    const snapshots = ['memory', 'disk'].map((name) => {
      const made = installation.cli(['snapshots', 'create', id, '--name', name, '--json']);
      assert.equal(made.code, 0, made.stderr);
      return JSON.parse(made.stdout) as { id: string; name: string; contents: string[]; state: string; checksum: string };
    });
    const [memory, disk] = snapshots as [(typeof snapshots)[0], (typeof snapshots)[0]];
    assert.deepEqual(memory.contents, ['memory', 'disk']);
    assert.equal(memory.state, 'available');
    const listed = JSON.parse(installation.cli(['snapshots', 'ls', '--session', id, '--json']).stdout) as { id: string }[];
    assert.deepEqual(
      listed.map((s) => s.id),
      [memory.id, disk.id],
    );
    assert.equal(installation.cli(['exec', id, '--', 'cat', '/workspace/kept.txt']).stdout, 'kept\n', 'the session ran on after its snapshots');

    const sessionsBefore = (JSON.parse(installation.cli(['sessions', 'ls', '--json']).stdout) as unknown[]).length;
    const memoryDir = join(installation.dataDir, 'snapshots', memory.id);
    const pages = readdirSync(memoryDir).find((file) => file.startsWith('pages') && !file.includes('meta')) ?? 'checkpoint.img';
    const bytes = readFileSync(join(memoryDir, pages));
    bytes[bytes.length >> 1] = (bytes[bytes.length >> 1] ?? 0) ^ 0xff;
    writeFileSync(join(memoryDir, pages), bytes);
    truncateSync(join(installation.dataDir, 'snapshots', disk.id, 'disk.ext4'), 1024 * 1024);
    for (const snapshot of [memory, disk]) {
      const refused = installation.cli(['sessions', 'fork', id, '--count', '1', '--snapshot', snapshot.id]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /SNAPSHOT_CORRUPT/, `an altered ${snapshot.name} snapshot is refused`);
    }
    assert.equal((JSON.parse(installation.cli(['sessions', 'ls', '--json']).stdout) as unknown[]).length, sessionsBefore, 'nothing half-restored');

    assert.equal(installation.cli(['snapshots', 'rm', memory.id]).code, 0);
    assert.equal((JSON.parse(installation.cli(['snapshots', 'get', memory.id, '--json']).stdout) as { state: string }).state, 'deleted');
    assert.match(installation.cli(['sessions', 'fork', id, '--count', '1', '--snapshot', memory.id]).stderr, /SNAPSHOT_NOT_FOUND: .*deleted/);
    assert.match(installation.cli(['snapshots', 'get', 'snap_nothere']).stderr, /SNAPSHOT_NOT_FOUND/);

    for (const count of ['0', '-1', '65']) {
      const refused = installation.cli(['sessions', 'fork', id, '--count', count]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /INVALID_ARGUMENTS: fork count must be a whole number from 1 to 64/);
    }
    installation.cli(['sessions', 'rm', id]);
    assert.match(installation.cli(['sessions', 'fork', id, '--count', '1']).stderr, /INVALID_STATE: cannot fork session .*terminated/);
    assert.deepEqual(
      readdirSync(join(installation.dataDir, 'snapshots')).filter((name) => name.startsWith('snap_')),
      [],
      'terminate removed the snapshot bytes',
    );
  });
});
