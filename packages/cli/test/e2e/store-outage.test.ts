/**
 * Issue 26, item 3, end to end: a real `airlock serve --store postgres://…`
 * (a warm machine kept) on a PostgreSQL cluster of its own, with calls
 * running, while PostgreSQL is stopped for 20 s (`pg_ctl stop -m fast`) and
 * then killed with SIGKILL. The server stays up; calls that need the store
 * answer 503 STORE_UNAVAILABLE at once instead of hanging; nothing rejects
 * unhandled; the session's processes keep running; once PostgreSQL is back,
 * every acknowledged write is there and new calls work, without a restart.
 * A server stopped while the database is down removes its warm machine and
 * leaves its session running for the next start, which adopts it; and the
 * installation, removed, leaves no machine behind.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Sandbox } from '@airlock/sdk';
import { TestInstallation, freePort, hostProcessesMatching, join } from '../support/test-installation.js';
import { NO_POSTGRES, testPostgresUrl } from '../support/test-database.js';

const CLUSTER_SCRIPT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../../../../scripts/postgres-test-cluster.sh');
const PG_BIN = '/usr/lib/postgresql/15/bin';
const OUTAGE_MS = 20_000;
/** A call that takes longer than this during an outage is hanging, not failing fast. */
const HANG_MS = 15_000;

// The harness fails on any promise rejected unhandled in this process, whoever let it through.
const unhandled: unknown[] = [];
process.on('unhandledRejection', (reason) => unhandled.push(reason));

async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A PostgreSQL cluster of this test's own (never the shared test cluster), stopped and started at will. */
class OwnCluster {
  readonly dir = mkdtempSync('/var/tmp/airlock-outage-pg-');
  url = '';
  constructor(readonly port: number) {}

  start(): void {
    const started = spawnSync(CLUSTER_SCRIPT, ['start', this.dir, String(this.port)], { encoding: 'utf8' });
    assert.equal(started.status, 0, started.stderr);
    this.url = started.stdout.trim();
  }

  /** Starts it again on its data (the options the script gave it); true once it accepts connections. */
  restart(): boolean {
    const options = `-c listen_addresses=127.0.0.1 -c port=${this.port} -c unix_socket_directories=${this.dir}/socket -c fsync=off -c max_connections=300`;
    return this.pgCtl(['-l', `${this.dir}/server.log`, '-w', '-t', '60', '-o', options, 'start']).status === 0;
  }

  stopFast(): void {
    const stopped = this.pgCtl(['-m', 'fast', '-w', 'stop']);
    assert.equal(stopped.status, 0, stopped.stderr);
  }

  /** SIGKILL to the postmaster, as the OOM killer or a crashed host would. */
  killPostmaster(): number {
    const pid = Number(readFileSync(join(this.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, 'SIGKILL');
    return pid;
  }

  destroy(): void {
    spawnSync(CLUSTER_SCRIPT, ['stop', this.dir], { encoding: 'utf8' });
    rmSync(this.dir, { recursive: true, force: true });
  }

  serverLog(): string {
    try {
      return readFileSync(join(this.dir, 'server.log'), 'utf8');
    } catch {
      return '';
    }
  }

  private pgCtl(args: string[]) {
    return spawnSync('runuser', ['-u', 'postgres', '--', `${PG_BIN}/pg_ctl`, '-D', join(this.dir, 'data'), ...args], { encoding: 'utf8' });
  }
}

interface Answer {
  status: number;
  code: string | undefined;
  message: string | undefined;
  id: string | undefined;
  ms: number;
}

describe('PostgreSQL outages do not take the server down', { skip: testPostgresUrl() ? false : NO_POSTGRES }, () => {
  let cluster: OwnCluster;
  let installation: TestInstallation;
  let sandbox: Sandbox;
  let counterPid: number;
  /** files whose write was acknowledged (200), with their content */
  const acknowledged = new Map<string, string>();
  const sessionsCreated: string[] = [];

  before(async () => {
    cluster = new OwnCluster(await freePort());
    cluster.start();
    installation = await TestInstallation.start({ store: { url: cluster.url }, serveArgs: ['--warm-pool', '1'] });
    sandbox = await Sandbox.create(connection());
    sessionsCreated.push(sandbox.id);
    await sandbox.files.write('/workspace/before.txt', 'written before');
    acknowledged.set('/workspace/before.txt', 'written before');
    counterPid = (await sandbox.commands.detach('while :; do date +%s > /tmp/tick; sleep 1; done')).pid;
  });
  after(async () => {
    try {
      const dataDir = installation?.dataDir;
      await installation?.destroy();
      if (dataDir) assert.deepEqual(hostProcessesMatching(dataDir), [], 'no machine of the server is left running');
    } finally {
      cluster?.destroy();
    }
  });

  const connection = () => ({ url: installation.url, token: installation.token });
  const api = async (method: string, path: string, body?: unknown): Promise<Answer> => {
    const started = Date.now();
    const response = await fetch(`${installation.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${installation.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(HANG_MS * 2),
    });
    const text = await response.text();
    const parsed = text ? (JSON.parse(text) as { id?: string; error?: { code: string; message: string } }) : {};
    return { status: response.status, code: parsed.error?.code, message: parsed.error?.message, id: parsed.id, ms: Date.now() - started };
  };

  /** Calls of every kind, over and over, until `until` says stop; every answer is 200/201 or a 503 STORE_UNAVAILABLE, and none hangs. */
  const callsDuring = async (until: () => boolean, label: string): Promise<Answer[]> => {
    const answers: Answer[] = [];
    for (let round = 0; !until(); round += 1) {
      const path = `/workspace/${label}-${round}.txt`;
      const content = `${label} ${round}`;
      const write = await api('POST', `/v1/sessions/${sandbox.id}/tools/files.write`, { path, content });
      if (write.status === 200) acknowledged.set(path, content);
      const listed = await api('GET', '/v1/sessions');
      const created = await api('POST', '/v1/sessions', {});
      answers.push(write, listed, created);
      if (created.status === 201 && created.id) sessionsCreated.push(created.id);
      await new Promise((r) => setTimeout(r, 500));
    }
    return answers;
  };
  const fetchSessionIds = async (): Promise<string[]> => {
    const response = await fetch(`${installation.url}/v1/sessions`, { headers: { authorization: `Bearer ${installation.token}` } });
    return ((await response.json()) as { sessions: { id: string }[] }).sessions.map((session) => session.id);
  };

  const checkOutageAnswers = (answers: Answer[], diagnostic: (message: string) => void) => {
    assert.ok(answers.length > 0);
    const counts = new Map<string, number>();
    for (const answer of answers)
      counts.set(`${answer.status}${answer.code ? ` ${answer.code}` : ''}`, (counts.get(`${answer.status}${answer.code ? ` ${answer.code}` : ''}`) ?? 0) + 1);
    diagnostic(
      `answers during the outage: ${[...counts].map(([what, count]) => `${count}× ${what}`).join(', ')}; slowest ${Math.max(...answers.map((answer) => answer.ms))} ms`,
    );
    for (const answer of answers) {
      assert.ok(answer.ms < HANG_MS, `a call took ${answer.ms} ms during the outage: it hangs instead of failing fast`);
      if (answer.status < 300) continue;
      assert.equal(answer.status, 503, `${answer.status} ${answer.code}: ${answer.message}`);
      assert.equal(answer.code, 'STORE_UNAVAILABLE', answer.message);
      assert.match(answer.message ?? '', /retry/i, 'the message says to retry');
    }
    assert.ok(
      answers.some((answer) => answer.status === 503),
      'calls needing the store were refused while it was down',
    );
  };

  const checkRecovered = async (diagnostic: (message: string) => void) => {
    await waitFor(async () => ((await api('GET', '/v1/sessions')).status === 200 ? true : undefined), 'the server to answer again once PostgreSQL is back');
    assert.equal((await fetch(`${installation.url}/healthz`)).status, 200, 'the same server process, never restarted');
    assert.doesNotMatch(installation.serverLog, /unhandled|UnhandledPromiseRejection/i, installation.serverLog);
    const ids = await fetchSessionIds();
    for (const id of sessionsCreated) assert.ok(ids.includes(id), `session ${id}, created and acknowledged, is still there`);
    // A write made as the database went down may be answered 503 while its file is on the disk: only acknowledged ones are checked.
    for (const [path, content] of acknowledged) assert.equal(await sandbox.files.read(path), content, `${path} is there after the outage`);
    const alive = await sandbox.commands.run(`kill -0 ${counterPid} && echo alive`);
    assert.equal(alive.stdout.trim(), 'alive', 'the process started before the outage kept running');
    const fresh = await Sandbox.create(connection());
    assert.equal((await fresh.commands.run('echo new')).stdout, 'new\n', 'a new session works');
    await fresh.kill();
    diagnostic(
      `server: ${installation.serverLog
        .split('\n')
        .filter((line) => line.startsWith('airlock: ') && /unavailable|answers again/.test(line))
        .join(' | ')}`,
    );
    assert.deepEqual(unhandled, [], 'nothing rejected unhandled in the test process');
  };

  it('PostgreSQL stopped for 20 s (pg_ctl stop -m fast): calls answer 503 STORE_UNAVAILABLE at once, the server and its machines live on, and everything resumes', async (t) => {
    // A call running in the machine as the database goes away.
    const running = api('POST', `/v1/sessions/${sandbox.id}/exec`, { command: 'sleep 3; echo done' });
    await new Promise((r) => setTimeout(r, 1000));
    const stoppedAt = Date.now();
    const during = callsDuring(() => Date.now() - stoppedAt > OUTAGE_MS, 'stopped');
    cluster.stopFast();
    const answers = [await running, ...(await during)];
    assert.equal((await fetch(`${installation.url}/healthz`)).status, 200, 'the server is alive during the outage');
    checkOutageAnswers(answers, (message) => t.diagnostic(message));
    assert.ok(cluster.restart(), cluster.serverLog());
    await checkRecovered((message) => t.diagnostic(message));
  });

  it('PostgreSQL killed with SIGKILL: the same, and it comes back after crash recovery', async (t) => {
    const killedAt = Date.now();
    const during = callsDuring(() => Date.now() - killedAt > OUTAGE_MS / 2, 'killed');
    const pid = cluster.killPostmaster();
    const answers = await during;
    checkOutageAnswers(answers, (message) => t.diagnostic(message));
    // The backends follow their postmaster; a start before they are gone finds their shared memory in use, and is tried again.
    await waitFor(
      async () => (cluster.restart() ? true : undefined),
      `PostgreSQL to start again after its postmaster ${pid} was killed:\n${cluster.serverLog()}`,
    );
    await checkRecovered((message) => t.diagnostic(message));
  });

  it('a server stopped while PostgreSQL is down removes its warm machine, leaves its sessions running, and the next start adopts them', async () => {
    cluster.stopFast();
    const runsc = () =>
      spawnSync('runsc', [`--root=${join(installation.dataDir, 'runsc', 'runsc')}`, 'list', '-quiet'], { encoding: 'utf8' })
        .stdout.split('\n')
        .filter(Boolean);
    assert.ok(
      runsc().some((id) => id.includes('pool_')),
      `a warm machine runs: ${runsc().join(', ')}`,
    );
    await installation.stopServer();
    assert.doesNotMatch(installation.serverLog, /unhandled|shutdown took longer|shutdown failed/i, installation.serverLog);
    assert.deepEqual(
      runsc().filter((id) => id.includes('pool_')),
      [],
      'no warm machine is left behind',
    );
    assert.ok(
      runsc().some((id) => id.includes(sandbox.id)),
      "the session's machine keeps running for the next start",
    );
    assert.ok(cluster.restart(), cluster.serverLog());
    await installation.startServer();
    assert.equal(await sandbox.files.read('/workspace/before.txt'), 'written before');
    const alive = await sandbox.commands.run(`kill -0 ${counterPid} && echo alive`);
    assert.equal(alive.stdout.trim(), 'alive', 'adopted with its processes');
  });
});
