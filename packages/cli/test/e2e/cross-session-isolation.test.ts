/**
 * The security invariant "a session cannot read, write or signal anything of
 * another session" (DESIGN.md), end to end on one real server and the real
 * gVisor driver. Session B keeps a secret in its workspace, root layer and
 * tmpfs, in a process's argv, behind an exposed port, an abstract socket and
 * a SysV segment. Session A attacks with B's real host paths (disk image,
 * mount point, loop device, state dir, /proc of B's host pids) through the
 * files API, `..`, symlinks, exec, mount, mknod, kill and the network.
 *
 * Needles never travel into A whole: A gets each as two halves and joins
 * them, so A's own command lines and scripts cannot hold what it searches
 * for. Each probe has a positive control where one exists, so that a probe
 * that silently did nothing (a missing tool, a wrong path) cannot pass.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { AirlockApiError, Sandbox } from '@airlock/sdk';
import { AIRLOCK_BIN, TestInstallation, hostProcessesMatching, type CliResult } from '../support/test-installation.js';
import {
  PRELUDE,
  SCAN_FILESYSTEM,
  PROBE_PROCESSES,
  PROBE_DEVICES,
  PROBE_NETWORK,
  B_SHARED_MEMORY,
  B_ABSTRACT_LISTENER,
  KILL_EVERYTHING,
} from '../support/isolation-probes.js';

/** The halves A gets of a needle. */
function halves(needle: string): [string, string] {
  const middle = Math.floor(needle.length / 2);
  return [needle.slice(0, middle), needle.slice(middle)];
}

const random = () => randomBytes(6).toString('hex');

/** One hostile call of A's files API. */
interface Probe {
  what: string;
  /** the path cannot exist in A, so the call must fail; otherwise it may answer with A's own data */
  mustFail: boolean;
  call: () => Promise<unknown>;
}

interface SessionJson {
  id: string;
  sandboxId: string;
}

describe('cross-session isolation on gVisor: session A cannot read, write, signal or reach session B', { timeout: 300_000 }, () => {
  let installation: TestInstallation;
  let a: Sandbox;
  let b: Sandbox;
  const secret = `xsess-secret-${random()}`;
  const secretName = `b-private-${random()}.txt`;
  const processMarker = `xsess-process-${random()}`;
  const control = `xsess-control-${random()}`;
  const fromA = `xsess-from-a-${random()}`;
  const abstractName = `xsess-socket-${random()}`;
  const shmKey = 0x5000_0000 + randomBytes(3).readUIntBE(0, 3);
  /** B's files, devices and processes as the host sees them: what A aims at. */
  const host = {
    image: '',
    mount: '',
    workspace: '',
    secret: '',
    stateDir: '',
    loopDevice: '',
    major: 0,
    minor: 0,
    runscPids: [] as number[],
    pids: [] as number[],
    aWorkspace: '',
  };
  let markerPid = 0;
  let victimPid = 0;
  let exposedUrl = '';
  const sessionIds: string[] = [];

  const cli = (args: string[], input?: string): Promise<CliResult> => runCli(installation, args, input);
  const cliOk = async (args: string[], input?: string): Promise<string> => {
    const result = await cli(args, input);
    assert.equal(result.code, 0, `airlock ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
    return result.stdout;
  };
  const python = async <T>(sandbox: Sandbox, body: string, input: Record<string, unknown>): Promise<T> => {
    const result = await sandbox.commands.run(['python3', '-', JSON.stringify(input)], { stdin: `${PRELUDE}\n${body}\n`, timeoutMs: 90_000 });
    assert.equal(result.exitCode, 0, `python in ${sandbox.id} failed: ${result.stderr}\n${result.stdout}`);
    return JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '{}') as T;
  };
  const shell = async (sandbox: Sandbox, command: string): Promise<string> => {
    const result = await sandbox.commands.run(command, { timeoutMs: 60_000 });
    assert.equal(result.exitCode, 0, `\`${command}\` in ${sandbox.id} failed: ${result.stderr}`);
    return result.stdout;
  };
  /** Fails when `text`, something A answered, holds B's secret or B's process marker. */
  const assertNoLeak = (text: string, what: string) => {
    for (const needle of [secret, processMarker]) assert.ok(!text.includes(needle), `${what} leaked B's ${needle}: ${text.slice(0, 300)}`);
  };
  /** Runs file probes against A, a few at a time: none may answer with B's data, and those that must fail fail. */
  const runProbes = async (probes: Probe[]) => {
    const outcomes = await pooled(probes, (probe) => attempt(probe.call));
    probes.forEach((probe, index) => {
      const outcome = outcomes[index] ?? { code: 'missing', text: '' };
      assertNoLeak(outcome.text, probe.what);
      if (probe.mustFail) assert.equal(outcome.code, 'FILE_NOT_FOUND', `${probe.what} in A: ${outcome.text}`);
    });
  };
  /** The needles of B that must never show up in A. */
  const bNeedles = () => ({ secret: halves(secret), secretName: halves(secretName), processMarker: halves(processMarker), sessionB: halves(b.id) });
  /** B is intact: its marker process runs, its host processes live, its secret is unchanged, and it still answers. */
  const assertBIntact = async () => {
    const alive = await b.commands.run(`kill -0 ${markerPid} && cat /proc/${markerPid}/cmdline`, { timeoutMs: 30_000 });
    assert.equal(alive.exitCode, 0, `B's marker process ${markerPid} is gone: ${alive.stderr}`);
    assert.match(alive.stdout, new RegExp(processMarker));
    for (const pid of host.pids) assert.ok(isHostProcessAlive(pid), `B's host process ${pid} is gone`);
    assert.equal(await b.files.read(`/workspace/${secretName}`), secret);
    assert.equal(readFileSync(host.secret, 'utf8'), secret);
  };

  before(async () => {
    installation = await TestInstallation.start();
    const connection = { url: installation.url, token: installation.token };
    const create = async (): Promise<SessionJson> => {
      const session = JSON.parse(await cliOk(['sessions', 'create', '--json'])) as SessionJson;
      sessionIds.push(session.id);
      // Asleep, a machine has no processes to attack: both stay up for the whole file.
      await cliOk(['sessions', 'keep-awake', session.id]);
      return session;
    };
    const [sessionA, sessionB] = await Promise.all([create(), create()]);
    a = await Sandbox.connect(sessionA.id, connection);
    b = await Sandbox.connect(sessionB.id, connection);

    const setUpB = async () => {
      // B's secret: in its workspace (through the CLI), its root layer, its tmpfs, its shared memory.
      await cliOk(['files', 'write', b.id, `/workspace/${secretName}`], secret);
      await shell(
        b,
        `mkdir -p /workspace/www && printf %s '${secret}' | tee /workspace/www/index.html /root/${secretName} /tmp/${secretName} /dev/shm/${secretName} >/dev/null`,
      );
      await python(b, B_SHARED_MEMORY, { shmKey, secret });
      markerPid = Number((await cliOk(['exec', b.id, '--detach', '--', 'python3', '-c', 'import time; time.sleep(3600)', processMarker])).trim());
      assert.ok(markerPid > 0);
      await b.commands.detach(['python3', '-m', 'http.server', '8000', '--bind', '127.0.0.1', '--directory', '/workspace/www']);
      await b.commands.detach(['python3', '-c', B_ABSTRACT_LISTENER, abstractName, secret]);
      exposedUrl = (await cliOk(['ports', 'expose', b.id, '8000'])).trim();
    };
    const setUpA = async () => {
      // A's own file and process: the positive controls.
      await a.files.write('/workspace/control.txt', `${control}\n`);
      victimPid = (await a.commands.detach(['python3', '-c', 'import time; time.sleep(3600)', 'a-victim'])).pid;
    };
    await Promise.all([setUpB(), setUpA()]);

    const diskDir = join(installation.dataDir, 'disks', b.id);
    host.image = join(diskDir, 'disk.ext4');
    host.mount = join(diskDir, 'mnt');
    host.workspace = join(diskDir, 'mnt', 'workspace');
    host.secret = join(host.workspace, secretName);
    host.stateDir = join(installation.dataDir, 'sandboxes', sessionB.sandboxId);
    host.aWorkspace = join(installation.dataDir, 'disks', a.id, 'mnt', 'workspace');
    assert.equal(readFileSync(host.secret, 'utf8'), secret, 'the host paths A aims at are where B keeps its secret');
    assert.ok(existsSync(join(host.stateDir, 'bundle', 'config.json')), `B's state dir is ${host.stateDir}`);
    host.loopDevice = spawnSync('losetup', ['-j', host.image], { encoding: 'utf8' }).stdout.split(':')[0] ?? '';
    assert.match(host.loopDevice, /^\/dev\/loop\d+$/, `B's disk is on a loop device`);
    const rdev = statSync(host.loopDevice).rdev;
    host.major = (rdev >> 8) & 0xfff;
    host.minor = (rdev & 0xff) | ((rdev >> 12) & 0xfff00);
    host.runscPids = hostProcessesMatching(b.id).map((line) => Number.parseInt(line.trim(), 10));
    assert.ok(host.runscPids.length >= 2, `B's runsc sandbox and gofer are host processes: ${host.runscPids.join(' ')}`);
    host.pids = hostProcessTree(host.runscPids);
  });

  after(async () => {
    if (!installation) return;
    for (const id of sessionIds) await cli(['sessions', 'rm', id]);
    const leftover = sessionIds.flatMap((id) => hostProcessesMatching(id));
    if (leftover.length === 0) await installation.destroy();
    else {
      // Never delete a data dir under live sandboxes: stop the server and leave the dir for a look.
      await installation.stopServer();
      assert.fail(`host processes of the sessions survived terminate; left ${installation.dataDir} in place:\n${leftover.join('\n')}`);
    }
  });

  it("finds none of B's contents, file names or session id anywhere in A's filesystem", { timeout: 90_000 }, async () => {
    const scan = await python<{ scanned: number; hits: string[] }>(a, SCAN_FILESYSTEM, { needles: { ...bNeedles(), control: halves(control) } });
    assert.ok(scan.scanned > 1000, `the scan read the whole filesystem (${scan.scanned} files)`);
    assert.deepEqual(scan.hits, ['control: /workspace/control.txt'], "only A's own control marker is found");
  });

  it("reads none of B's host paths through A's files API: absolute, `..`, relative, /proc of B's host pids", { timeout: 60_000 }, async () => {
    const toSecret = relative(host.aWorkspace, host.secret);
    const mustNotExist = [
      host.secret,
      `/../../..${host.secret}`,
      `${'../'.repeat(16)}${host.secret.slice(1)}`,
      `/workspace/../../../..${host.secret}`,
      toSecret,
      `/workspace/${toSecret}`,
      host.image,
      host.loopDevice,
      join(host.stateDir, 'bundle', 'config.json'),
      `/proc/self/root${host.secret}`,
      `/proc/1/root/../../..${host.secret}`,
      `/proc/1/cwd/${'../'.repeat(8)}${host.secret.slice(1)}`,
    ];
    const probes: Probe[] = [
      ...mustNotExist.map((path) => ({ what: `files.read ${path}`, mustFail: true, call: () => a.files.read(path) })),
      ...[host.secret, host.image].map((path) => ({ what: `files.stat ${path}`, mustFail: true, call: () => a.files.stat(path) })),
      ...[host.workspace, host.mount, join(installation.dataDir, 'disks')].map((path) => ({
        what: `files.list ${path}`,
        mustFail: true,
        call: () => a.files.list(path),
      })),
      // Host pid numbers may exist in A's own pid space; whatever answers must be A's, never B's.
      ...host.runscPids.flatMap((pid) =>
        [`/proc/${pid}/root/workspace/${secretName}`, `/proc/${pid}/environ`].map((path) => ({
          what: `files.read ${path}`,
          mustFail: false,
          call: () => a.files.read(path),
        })),
      ),
    ];
    await runProbes(probes);
    // The CLI is the same API; one hostile read through it, as an agent's operator would type it.
    const viaCli = await cli(['files', 'read', a.id, `/../../..${host.secret}`]);
    assert.notEqual(viaCli.code, 0);
    assert.match(viaCli.stderr, /FILE_NOT_FOUND/);
    assertNoLeak(viaCli.stdout, 'airlock files read');
  });

  it("follows symlinks in A to B's host paths inside A only: files API, exec cat, an ephemeral sandbox", { timeout: 60_000 }, async () => {
    const links: Record<string, string> = {
      'abs-secret': host.secret,
      'abs-workspace': host.workspace,
      'abs-image': host.image,
      'abs-loop': host.loopDevice,
      // Resolved on the host, from A's workspace dir on A's disk, these two land on B's disk.
      'rel-secret': relative(join(host.aWorkspace, 'links'), host.secret),
      'rel-workspace': relative(join(host.aWorkspace, 'links'), host.workspace),
      'proc-root': `/proc/1/root${host.secret}`,
      ...Object.fromEntries(host.runscPids.map((pid) => [`host-pid-${pid}`, `/proc/${pid}/root/workspace/${secretName}`])),
      control: '/workspace/control.txt',
    };
    await shell(
      a,
      `mkdir -p /workspace/links && cd /workspace/links && ${Object.entries(links)
        .map(([name, target]) => `ln -s '${target}' '${name}'`)
        .join(' && ')}`,
    );
    assert.equal(realpathSync(join(host.aWorkspace, 'links', 'rel-secret')), host.secret, 'the relative link is a real attack: on the host it resolves to B');

    const probes: Probe[] = Object.entries(links)
      .filter(([name]) => name !== 'control')
      .map(([name, target]) => ({ what: `files.read through ${name} -> ${target}`, mustFail: true, call: () => a.files.read(`/workspace/links/${name}`) }));
    for (const name of ['abs-workspace', 'rel-workspace']) {
      probes.push({ what: `files.read ${name}/${secretName}`, mustFail: true, call: () => a.files.read(`/workspace/links/${name}/${secretName}`) });
      probes.push({ what: `files.list ${name}`, mustFail: true, call: () => a.files.list(`/workspace/links/${name}`) });
    }
    await runProbes(probes);
    assert.equal((await a.files.read('/workspace/links/control')).trim(), control, 'files.read follows a link inside A');

    const catAll = `cd /workspace/links && for l in *; do cat "$l" "$l/${secretName}" 2>/dev/null; done; echo cat-done`;
    for (const ephemeral of [false, true]) {
      const result = await a.commands.run(catAll, { timeoutMs: 60_000, ephemeral });
      assertNoLeak(result.stdout + result.stderr, `cat through the links (${ephemeral ? 'ephemeral sandbox' : 'machine'})`);
      assert.equal(result.stdout, `${control}\ncat-done\n`, `only the control link reads (${ephemeral ? 'ephemeral' : 'machine'})`);
    }
  });

  it("sees none of B's processes in A and cannot signal them, by B's pid numbers or B's host pids", { timeout: 60_000 }, async () => {
    const inB = await shell(b, 'ps -eo pid,args');
    assert.match(inB, new RegExp(processMarker), "control: B's ps shows its marker");
    const inA = await shell(a, 'ps -eo pid,args; ls /proc');
    assert.doesNotMatch(inA, new RegExp(`${processMarker}|${secret}`), "A's ps and /proc do not show B's processes");

    const targets = [markerPid, ...host.pids];
    const probe = await python<{ pids: number[]; leaks: string[]; signals: Record<string, Record<string, unknown>> }>(a, PROBE_PROCESSES, {
      needles: bNeedles(),
      targets,
    });
    assert.deepEqual(probe.leaks, [], "no /proc entry of A holds B's argv, environment, name or id");
    assert.ok(probe.pids.includes(victimPid), `control: A's /proc lists A's own process ${victimPid}`);
    for (const pid of targets) {
      const entry = probe.signals[String(pid)] ?? {};
      if (entry['local']) assert.deepEqual(entry['leak'], [], `pid ${pid} in A is A's own process`);
      else for (const signal of ['0', '15', '9']) assert.equal(entry[signal], 'ESRCH', `signal ${signal} to ${pid} from A: ${JSON.stringify(entry)}`);
    }
    // Through the shell's kill too, as an agent would type it (numbers that are A's own are spared: one may be A's init).
    const foreign = host.pids.filter((pid) => !probe.signals[String(pid)]?.['local']);
    const shellKill = await a.commands.run(`kill -9 ${foreign.join(' ')}`, { timeoutMs: 30_000 });
    assert.notEqual(shellKill.exitCode, 0, `kill -9 of B's host pids from A fails: ${shellKill.stdout}${shellKill.stderr}`);
    await assertBIntact();
  });

  it("has no host block device in A and cannot mount, attach or open B's disk", { timeout: 60_000 }, async () => {
    type Devices = {
      dev: string[];
      sysBlock: string[];
      tools: Record<string, { code: number; output: string }>;
      syscalls: Record<string, string>;
      nodes: Record<string, { mknod: string; open: string; leak?: string[] }>;
      mountsUnchanged: boolean;
      target: string[];
    };
    const probe = await python<Devices>(a, PROBE_DEVICES, {
      needles: bNeedles(),
      image: host.image,
      loop: host.loopDevice,
      major: host.major,
      minor: host.minor,
    });
    const blockLike = probe.dev.filter((name) => /^(loop|sd|vd|xvd|hd|nvme|mmcblk|dm-|md|ram|mapper|disk|mem$|kmem|port$|sg)/.test(name));
    assert.deepEqual(blockLike, [], `A's /dev: ${probe.dev.join(' ')}`);
    assert.deepEqual(probe.sysBlock, [], 'A sees no block devices in /sys/block');
    for (const [name, result] of Object.entries(probe.tools)) assert.notEqual(result.code, 0, `${name} must fail in A: ${result.output}`);
    for (const [name, result] of Object.entries(probe.syscalls)) assert.notEqual(result, 'mounted', `mount(2) ${name} must fail in A`);
    for (const [name, result] of Object.entries(probe.nodes)) {
      assert.doesNotMatch(result.open, /^read/, `a ${name} node opens nothing in A: ${JSON.stringify(result)}`);
      assert.deepEqual(result.leak ?? [], []);
    }
    assert.ok(probe.mountsUnchanged, "A's mount table is unchanged");
    assert.deepEqual(probe.target, []);
  });

  it("has no network path from A to B: loopback, the host's addresses, B's exposed port, abstract socket or SysV memory", { timeout: 60_000 }, async () => {
    let answered: Response | undefined;
    for (let attempt = 0; attempt < 50 && answered?.status !== 200; attempt++) {
      answered = await fetch(exposedUrl, { headers: { authorization: `Bearer ${installation.token}` }, signal: AbortSignal.timeout(10_000) });
      if (answered.status !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(await answered?.text(), secret, "control: B's service answers through its exposed port");
    const inB = await python<{ abstract: string; shm: string; exposedUrl: string }>(b, PROBE_NETWORK, {
      needles: { secret: halves(secret) },
      hosts: [],
      ports: [],
      exposedUrl: 'http://127.0.0.1:8000/',
      abstract: halves(abstractName),
      shmKey,
    });
    assert.equal(inB.abstract, "connected, leak ['secret']", "control: B's abstract socket answers in B");
    assert.match(inB.shm, /^found/, "control: B's SysV segment exists in B");
    assert.equal(inB.exposedUrl, "answered 200, leak ['secret']", "control: B's service listens on B's loopback");

    const hostAddresses = Object.values(networkInterfaces())
      .flatMap((list) => list ?? [])
      .filter((entry) => !entry.internal)
      .map((entry) => entry.address);
    const probe = await python<{ tcp: Record<string, string>; exposedUrl: string; abstract: string; shm: string; interfaces: string[] }>(a, PROBE_NETWORK, {
      needles: { secret: halves(secret) },
      hosts: ['127.0.0.1', '::1', '10.200.0.1', ...hostAddresses],
      ports: [installation.port, 8000],
      exposedUrl,
      abstract: halves(abstractName),
      shmKey,
    });
    for (const [target, result] of Object.entries(probe.tcp)) assert.match(result, /^failed/, `A connecting to ${target}: ${result}`);
    assert.match(probe.exposedUrl, /^failed/, `A fetching B's exposed URL ${exposedUrl}: ${probe.exposedUrl}`);
    assert.match(probe.abstract, /^failed/, `A connecting to B's abstract socket: ${probe.abstract}`);
    assert.equal(probe.shm, 'ENOENT', "A cannot find B's SysV segment by its key");
    assert.deepEqual(probe.interfaces, ['lo'], 'a session without a network section has loopback only');
  });

  it('writes nothing into B: what A writes through the files API, exec and hostile paths stays in A', { timeout: 60_000 }, async () => {
    const body = `${fromA}\n`;
    await a.files.write(`/workspace/a-${fromA}.txt`, body);
    await cliOk(['files', 'write', a.id, '/workspace/a-cli.txt'], body);
    await shell(a, `for f in /tmp/a.txt /dev/shm/a.txt /root/a.txt /etc/a.txt; do printf '%s\\n' '${fromA}' > $f; done`);
    // Hostile writes: B's host paths, straight, through symlinks and through /proc of B's host pids.
    const hostile = [
      host.secret,
      join(host.workspace, 'from-a.txt'),
      '/workspace/links/abs-workspace/from-a-link.txt',
      '/workspace/links/rel-workspace/from-a-rel.txt',
      '/workspace/links/rel-secret',
      '/workspace/links/abs-secret',
    ];
    for (const pid of host.runscPids) hostile.push(`/proc/${pid}/root/workspace/from-a-proc.txt`);
    const outcomes = await pooled(hostile, async (path) => `${path}: ${(await attempt(() => a.files.write(path, body))).code}`);
    const viaExec = await a.commands.run(
      `mkdir -p '${host.workspace}' && printf '%s\\n' '${fromA}' > '${host.workspace}/from-a-exec.txt' && printf '%s\\n' '${fromA}' > /workspace/links/abs-workspace/from-a-exec-link.txt; cat '${host.secret}'`,
      { timeoutMs: 30_000 },
    );
    assert.equal(viaExec.stdout, body, `in A, "B's" host path is an A-local file holding A's write (writes: ${outcomes.join('; ')})`);

    assert.deepEqual(readdirSync(host.workspace).sort(), [secretName, 'www'].sort(), "B's workspace on the host holds only B's files");
    assert.equal(readFileSync(host.secret, 'utf8'), secret, "B's secret on the host is unchanged");
    assert.equal(hostGrep(fromA, host.mount), false, "no file on B's disk holds A's write");
    assert.equal(hostGrep(fromA, dirname(host.aWorkspace)), true, "control: A's disk does hold it");
    const listing = (await b.files.list('/workspace')).map((entry) => entry.name).sort();
    assert.deepEqual(listing, [secretName, 'www'].sort(), "B's files API lists only B's files");
    const scan = await python<{ hits: string[] }>(b, SCAN_FILESYSTEM.replace("('proc', 'sys')", "('proc', 'sys', 'usr', 'lib', 'lib64', 'bin', 'sbin')"), {
      needles: { fromA: halves(fromA) },
    });
    assert.deepEqual(scan.hits, [], "nothing in B's filesystem (workspace, root layer, tmpfs, /dev/shm) holds A's write");
    await assertBIntact();
  });

  it("A killing every process it can see, B's pid numbers and its own init leaves B running", { timeout: 60_000 }, async (t) => {
    await a.commands.detach(['python3', '-c', `${PRELUDE}\n${KILL_EVERYTHING}`, JSON.stringify({ targets: [markerPid, ...host.pids] })]);
    const reportPath = join(host.aWorkspace, 'kill-report.json');
    for (let waited = 0; waited < 20_000 && !existsSync(reportPath); waited += 200) await new Promise((r) => setTimeout(r, 200));
    assert.ok(existsSync(reportPath), 'the killer in A wrote its report');
    const report = JSON.parse(readFileSync(reportPath, 'utf8')) as { seen: number[]; killed: Record<string, string>; minusOne: string; left: number[] };
    assert.equal(report.killed[String(victimPid)], 'delivered', `control: the kill reached A's own processes (${JSON.stringify(report)})`);
    // kill(-1) reaches whatever of A is left after the kills above: when they already ended every other
    // process (gVisor reaps SIGKILLed ones at once), there is none left and it answers ESRCH.
    assert.ok(['delivered', 'ESRCH'].includes(report.minusOne), `kill(-1) in A: ${report.minusOne}`);
    await new Promise((r) => setTimeout(r, 1000));
    await assertBIntact();
    const again = await fetch(exposedUrl, { headers: { authorization: `Bearer ${installation.token}` }, signal: AbortSignal.timeout(10_000) });
    assert.equal(await again.text(), secret, "B's service still answers");
    const aAfter = await attempt(() => a.commands.run('true', { timeoutMs: 10_000 }));
    t.diagnostic(`A after killing its own init: ${aAfter.code} ${aAfter.text.slice(0, 160)}`);
  });
});

/** The outcome of an SDK call that may fail: `code` is 'ok' or the server's error code; `text` the content or message. */
async function attempt<T>(call: () => Promise<T>): Promise<{ code: string; text: string }> {
  try {
    const value = await call();
    return { code: 'ok', text: typeof value === 'string' ? value : JSON.stringify(value) };
  } catch (error) {
    if (error instanceof AirlockApiError) return { code: error.code, text: error.message };
    throw error;
  }
}

function runCli(installation: TestInstallation, args: string[], input = '', timeoutMs = 60_000): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [AIRLOCK_BIN, ...args], { env: installation.env, stdio: 'pipe', timeout: timeoutMs, killSignal: 'SIGKILL' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdin.end(input);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** Runs `task` over `items`, `width` at a time; results in the order of `items`. */
async function pooled<T, R>(items: readonly T[], task: (item: T) => Promise<R>, width = 4): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < items.length; index = next++) results[index] = await task(items[index] as T);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return results;
}

/** `roots` and all their descendants on the host: a sandbox's runsc processes and their stubs. */
function hostProcessTree(roots: number[]): number[] {
  const rows = spawnSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .stdout.trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number));
  const tree = new Set(roots.filter((pid) => pid > 0));
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, ppid] of rows) {
      if (pid !== undefined && ppid !== undefined && tree.has(ppid) && !tree.has(pid)) {
        tree.add(pid);
        grew = true;
      }
    }
  }
  return [...tree].sort((x, y) => x - y);
}

function isHostProcessAlive(pid: number): boolean {
  const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return stat !== '' && state !== 'Z' && state !== 'X';
}

function hostGrep(needle: string, dir: string): boolean {
  return spawnSync('grep', ['-rqaF', '-e', needle, dir]).status === 0;
}
