/**
 * Issue 11's warm pools, end to end against a real server process and the
 * real gVisor driver (`airlock serve --warm-pool 1`): a create claims a
 * machine started before it, which is the session's alone (hostname, machine
 * id, RNG, an empty workspace of its own) and lives on like any other
 * (suspend, resume); what a crashed server left is removed at the next start,
 * and a stopped server leaves no warm machine behind.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { Sandbox } from '@airlock/sdk';
import { TestInstallation, join } from '../support/test-installation.js';

interface PoolStatus {
  size: number;
  classes: { imageName: string; ready: number; starting: number; claims: number; misses: number }[];
  lastFailure?: { code: string; message: string };
}

describe('warm pool on gVisor', () => {
  let installation: TestInstallation;
  before(async () => {
    installation = await TestInstallation.start({ serveArgs: ['--warm-pool', '1'] });
  });
  after(async () => {
    await installation?.destroy();
  });

  const connection = () => ({ url: installation.url, token: installation.token });
  const pool = async (): Promise<PoolStatus> => {
    const response = await fetch(`${installation.url}/v1/warm-pool`, { headers: { authorization: `Bearer ${installation.token}` } });
    assert.equal(response.status, 200);
    return (await response.json()) as PoolStatus;
  };
  /** Waits (for a condition, not a time) until the default class has a machine ready. */
  const poolReady = async (): Promise<PoolStatus> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const status = await pool();
      if (status.classes[0] && status.classes[0].ready >= 1) return status;
      assert.ok(!status.lastFailure, `the pool could not start a machine: ${JSON.stringify(status.lastFailure)}`);
      assert.ok(Date.now() < deadline, `no warm machine within 60 s: ${JSON.stringify(status)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  const startedEvent = async (sessionId: string): Promise<Record<string, unknown> | undefined> => {
    const response = await fetch(`${installation.url}/v1/sessions/${sessionId}/audit`, { headers: { authorization: `Bearer ${installation.token}` } });
    const body = (await response.json()) as { records: { type: string; data: Record<string, unknown> }[] };
    return body.records.find((record) => record.type === 'session.started')?.data;
  };
  const runscContainers = (): string[] => {
    const listed = spawnSync('runsc', [`--root=${join(installation.dataDir, 'runsc', 'runsc')}`, 'list', '-quiet'], { encoding: 'utf8' });
    return listed.stdout.split('\n').filter(Boolean);
  };
  const poolDisks = (): string[] => readdirSync(join(installation.dataDir, 'disks')).filter((name) => name.startsWith('pool_'));
  const identityScript = 'hostname; cat /etc/machine-id; ls -A /workspace | wc -l; head -c 16 /dev/urandom | od -An -tx1 | tr -d " \\n"';

  it('a create claims a warm machine that is the session alone, and it suspends and resumes like any other', async () => {
    const before = await poolReady();
    assert.equal(before.size, 1);
    const first = await Sandbox.create(connection());
    const [hostname, machineId, workspaceEntries, random] = (await first.commands.run(identityScript)).stdout.split('\n');
    assert.equal(hostname, first.id.replace(/_/g, '-'), 'the hostname is the session, not the pool machine');
    assert.match(machineId ?? '', /^[0-9a-f]{32}$/);
    assert.equal(workspaceEntries, '0', 'an empty workspace');
    assert.match(String((await startedEvent(first.id))?.['warmPool']), /^pool_/, 'the audit names the warm machine');
    assert.equal((await pool()).classes[0]?.claims, 1);
    await first.files.write('/workspace/mine.txt', 'first');

    await poolReady();
    const second = await Sandbox.create(connection());
    const [hostname2, machineId2, workspaceEntries2, random2] = (await second.commands.run(identityScript)).stdout.split('\n');
    assert.equal(hostname2, second.id.replace(/_/g, '-'));
    assert.notEqual(machineId2, machineId, 'every claimed machine has its own machine id');
    assert.notEqual(random2, random, 'and its own random numbers');
    assert.equal(workspaceEntries2, '0', "nothing of the first session's workspace");
    assert.match(String((await startedEvent(second.id))?.['warmPool']), /^pool_/);

    await first.suspend();
    await first.resume();
    assert.equal((await first.commands.run('cat /workspace/mine.txt; hostname')).stdout, `first${first.id.replace(/_/g, '-')}\n`);
    await first.kill();
    await second.kill();
    await poolReady();
    assert.deepEqual(poolDisks().length, 1, 'the pool holds one machine with its disk, nothing of the claimed ones');
    assert.equal(runscContainers().length, 1, `only the warm machine runs: ${runscContainers().join(', ')}`);
  });

  it('a networked session starts cold: its namespace is made with its machine', async () => {
    await poolReady();
    const sandbox = await Sandbox.create({ ...connection(), contract: { version: 1, network: { allowedDomains: ['example.org'] } } });
    try {
      assert.equal((await startedEvent(sandbox.id))?.['warmPool'], undefined);
      assert.equal((await pool()).classes[0]?.ready, 1, 'the warm machine is still there');
    } finally {
      await sandbox.kill();
    }
  });

  it('a restart after a crash removes the warm machines the dead server left, and refills', async () => {
    await poolReady();
    const [leftBehind] = poolDisks();
    await installation.crashServer();
    await installation.startServer();
    assert.match(installation.serverLog, /orphans removed/);
    await poolReady();
    assert.equal(poolDisks().length, 1);
    assert.notEqual(poolDisks()[0], leftBehind, 'a new machine, not the dead server one');
    assert.equal(runscContainers().length, 1);
  });

  it('a stopped server leaves no warm machine behind', async () => {
    await poolReady();
    await installation.stopServer();
    assert.deepEqual(poolDisks(), []);
    assert.deepEqual(runscContainers(), []);
    await installation.startServer();
  });

  it('refuses a bad --warm-pool before it starts anything', () => {
    for (const bad of ['-1', 'two', '1.5', '1000']) {
      const result = installation.cli(['serve', '--data-dir', join(installation.dataDir, 'unused'), '--listen', '127.0.0.1:1', '--warm-pool', bad]);
      assert.notEqual(result.code, 0, `--warm-pool ${bad} was accepted`);
      assert.match(result.stderr, /--warm-pool takes a whole number from 0 \(off\) to 64/);
    }
  });
});
