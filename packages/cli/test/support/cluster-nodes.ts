/**
 * Three Airlock nodes on one machine for the cluster tests (issue 14): three
 * `airlock serve` processes with their own data dirs, one PostgreSQL
 * database, one bucket on a loopback S3 server, one API token and one audit
 * key, and a short node lease so that a node that stops renewing is gone
 * within seconds.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { TestInstallation, type CliResult } from './test-installation.js';
import { ObjectStorageServer, TEST_BUCKET } from './object-storage-server.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';

/** The node lease of the tests, in seconds. */
export const TEST_LEASE_SECONDS = 5;

/** A node as `airlock nodes ls --json` prints it. */
export interface NodeView {
  id: string;
  address: string;
  state: string;
  sessions: number;
  heartbeatAt: string;
}

/** What the tests read of `sessions get --json`. */
export interface SessionView {
  id: string;
  node: string;
  state: string;
  sandboxId: string | null;
  failure: { code: string; message: string; lastSnapshotId?: string; lastSnapshotAt?: string } | null;
}

/** Three nodes and what they share. */
export class ClusterNodes {
  readonly nodes = new Map<string, TestInstallation>();

  private constructor(
    readonly database: TestDatabase,
    readonly objects: ObjectStorageServer,
    private readonly shared: string,
    private readonly prefix: string,
    private readonly token: string,
  ) {}

  /** Starts the database, the bucket and nodes named `names`, each with at most `maxSessions` machines (or what `capacities` says). */
  static async start(label: string, names: string[], maxSessions = 4, capacities: Record<string, number> = {}): Promise<ClusterNodes> {
    const database = await createTestDatabase(label);
    const objects = await ObjectStorageServer.start();
    const cluster = new ClusterNodes(
      database,
      objects,
      mkdtempSync('/var/tmp/airlock-cluster-'),
      label,
      `cluster-token-${Math.random().toString(36).slice(2)}`,
    );
    try {
      for (const name of names) await cluster.startNode(name, capacities[name] ?? maxSessions);
    } catch (error) {
      // A node that did not start: nothing of the cluster is left behind (the bucket's process would keep the test alive).
      await cluster.destroy();
      throw error;
    }
    return cluster;
  }

  /** Starts (or starts again, on a fresh data dir) the node `name`. */
  async startNode(name: string, maxSessions = 4): Promise<TestInstallation> {
    const node = await TestInstallation.start({
      store: { url: this.database.url },
      token: this.token,
      nodeId: name,
      env: {
        ...this.objects.env,
        AIRLOCK_AUDIT_KEY_FILE: join(this.shared, 'audit.key'),
        AIRLOCK_NODE_LEASE_SECONDS: String(TEST_LEASE_SECONDS),
        AIRLOCK_NODE_MAX_SESSIONS: String(maxSessions),
      },
      serveArgs: ['--objects', `s3://${TEST_BUCKET}/${this.prefix}`],
    });
    this.nodes.set(name, node);
    return node;
  }

  /** The node `name`. */
  node(name: string): TestInstallation {
    const node = this.nodes.get(name);
    assert.ok(node, `no node ${name}`);
    return node;
  }

  /** `airlock nodes ls --json` through `via`. */
  list(via: string): NodeView[] {
    return JSON.parse(ok(this.node(via).cli(['nodes', 'ls', '--json']), 'nodes ls')) as NodeView[];
  }

  /** The node holding the session, as `sessions get --json` says through `via`. */
  ownerOf(id: string, via: string): string {
    return this.session(id, via).node;
  }

  /** `sessions get --json` through `via`. */
  session(id: string, via: string): SessionView {
    return JSON.parse(ok(this.node(via).cli(['sessions', 'get', id, '--json']), 'sessions get')) as SessionView;
  }

  /** The session's audit records of `type`, read through `via`. */
  audit(id: string, via: string, type: string): { type: string; data: Record<string, unknown> }[] {
    return (JSON.parse(ok(this.node(via).cli(['audit', id, '--json']), 'audit')) as { type: string; data: Record<string, unknown> }[]).filter(
      (record) => record.type === type,
    );
  }

  /** Terminates what is left, stops every node and removes everything. */
  async destroy(): Promise<void> {
    for (const node of this.nodes.values()) node.signalServer('SIGCONT');
    // What the nodes said, for a failure's post-mortem.
    for (const [name, node] of this.nodes) process.stdout.write(`# node ${name} log:\n${node.serverLog.replace(/^/gm, '#   ')}\n`);
    const live = [...this.nodes.values()];
    for (const node of live) await node.destroy();
    await this.objects.close();
    await this.database.drop();
    rmSync(this.shared, { recursive: true, force: true });
  }
}

/** The output of a CLI run that must succeed. */
export function ok(result: CliResult, what: string): string {
  assert.equal(result.code, 0, `${what}: ${result.stderr}`);
  return result.stdout;
}

/** Waits until `condition` holds (checked every 100 ms), failing after `seconds`. */
export async function until<T>(condition: () => T | undefined | false | Promise<T | undefined | false>, what: string, seconds = 60): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${seconds} s waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A background counter: writes an increasing number to /tmp/count (memory-backed) every 50 ms. */
export const COUNTER = [
  'import time, os',
  'i = 0',
  'while True:',
  '    i += 1',
  "    open('/tmp/count.tmp', 'w').write(str(i)); os.replace('/tmp/count.tmp', '/tmp/count')",
  '    time.sleep(0.05)',
].join('\n');

/** Deletes a crashed node's data dir: its disks may still be loop-mounted. */
export function deleteDataDir(dataDir: string): void {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((mountPoint) => mountPoint.startsWith(`${dataDir}/`))
    .sort((a, b) => b.length - a.length);
  for (const mountPoint of mounts) spawnSync('umount', ['-l', mountPoint]);
  const disks = join(dataDir, 'disks');
  for (const session of existsSync(disks) ? readdirSync(disks) : []) {
    const attached = spawnSync('losetup', ['-j', join(disks, session, 'disk.ext4')], { encoding: 'utf8' }).stdout;
    for (const line of attached.split('\n')) if (line.includes(':')) spawnSync('losetup', ['-d', line.split(':')[0]!]);
  }
  rmSync(dataDir, { recursive: true, force: true });
}
