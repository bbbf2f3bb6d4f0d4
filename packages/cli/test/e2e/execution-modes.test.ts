/**
 * Issue 5's "done when", end to end against a real server process and the
 * real gVisor driver: per-call sandboxes over one persistent disk, sleeping
 * session machines (paused and suspended), detached services behind an
 * exposed port, and live resize. Figures worth reading are printed as test
 * diagnostics.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Sandbox } from '@airlock/sdk';
import { TestInstallation, hostProcessesMatching } from '../support/test-installation.js';

interface SessionJson {
  id: string;
  state: string;
  sandboxId: string | null;
  resources: { cpus: number; memoryMb: number };
  idle: { pauseAfterSeconds: number; suspendAfterSeconds: number } | null;
}

/** python3 that counts in memory and mirrors the count to /tmp (a sandbox tmpfs: memory too). */
// Written by rename, so that a read (or a checkpoint) between truncate and write never sees an empty count.
const COUNTER =
  "import os, time\ni = 0\nwhile True:\n    i += 1\n    open('/tmp/count.tmp', 'w').write(str(i))\n    os.replace('/tmp/count.tmp', '/tmp/count')\n    time.sleep(0.05)";

describe('execution modes on gVisor: per-call sandboxes, sleeping machines, services, live resize', () => {
  let installation: TestInstallation;
  let scratch: string;
  before(async () => {
    installation = await TestInstallation.start();
    scratch = mkdtempSync('/tmp/airlock-modes-');
  });
  after(async () => {
    await installation?.destroy();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const connection = () => ({ url: installation.url, token: installation.token });
  const cliOk = (args: string[], input?: string): string => {
    const result = installation.cli(args, input === undefined ? {} : { input });
    assert.equal(result.code, 0, `airlock ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
    return result.stdout;
  };
  const getSession = async (id: string): Promise<SessionJson> => (await api(installation, `/v1/sessions/${id}`)).json() as Promise<SessionJson>;
  const waitForState = async (id: string, state: string, timeoutMs: number): Promise<number> => {
    const started = Date.now();
    while (Date.now() - started < timeoutMs) {
      if ((await getSession(id)).state === state) return Date.now() - started;
      await sleep(100);
    }
    assert.fail(`session ${id} did not reach ${state} within ${timeoutMs} ms (it is ${(await getSession(id)).state})`);
  };
  const contractFile = (name: string, contract: Record<string, unknown>): string => {
    const path = join(scratch, `${name}.json`);
    writeFileSync(path, JSON.stringify({ version: 1, ...contract }));
    return path;
  };

  it('per-call: writes persist for the next call, no process survives a call, 4 calls run in parallel, the contract caps a call', async (t) => {
    const id = cliOk(['sessions', 'create', '--mode', 'per-call']).trim();
    cliOk(['exec', id, '--', 'sh', '-c', 'echo written-by-call-1 > /workspace/a.txt; sleep 1000 & echo started']);
    assert.equal(cliOk(['exec', id, '--', 'cat', '/workspace/a.txt']), 'written-by-call-1\n', 'the next call reads what the last one wrote');
    const processes = cliOk([
      'exec',
      id,
      '--',
      'python3',
      '-c',
      "import os; print('\\n'.join(open(f'/proc/{p}/cmdline').read().replace('\\0', ' ') for p in os.listdir('/proc') if p.isdigit()))",
    ]);
    assert.doesNotMatch(processes, /sleep 1000/, 'the background process of the earlier call is gone');

    // Parallel means the four sleeps were under way at one moment: the last one began before the first
    // one ended (each sandbox reads the host's clock). Calls run one after another never pass this,
    // however fast the machine; the 5 s sleep leaves room for boots staggered by a loaded host.
    const sandbox = await Sandbox.connect(id, connection());
    const sleeper = 'import time; print(time.time_ns()); time.sleep(5); print(time.time_ns())';
    const started = Date.now();
    const results = await Promise.all([1, 2, 3, 4].map(() => sandbox.commands.run(['python3', '-c', sleeper])));
    const wallMs = Date.now() - started;
    t.diagnostic(
      `4 parallel per-call \`sleep 5\`: ${wallMs} ms wall; per call start (boot) ${results.map((r) => r.timing.startMs).join('/')} ms, run ${results.map((r) => r.timing.runMs).join('/')} ms`,
    );
    assert.deepEqual(
      results.map((result) => result.exitCode),
      [0, 0, 0, 0],
    );
    const spans = results.map((result) => result.stdout.trim().split('\n').map(BigInt));
    const lastBegin = spans.reduce((latest, [begin]) => (begin! > latest ? begin! : latest), 0n);
    const firstEnd = spans.reduce((earliest, [, end]) => (end! < earliest ? end! : earliest), spans[0]![1]!);
    assert.ok(lastBegin < firstEnd, `the four sleeps were never all under way: the last began ${(lastBegin - firstEnd) / 1_000_000n} ms after the first ended`);

    const capped = cliOk(['sessions', 'create', '--mode', 'per-call', '--contract', contractFile('capped', { perCall: { maxSeconds: 2 } })]).trim();
    const begun = Date.now();
    const response = await api(installation, `/v1/sessions/${capped}/exec`, { method: 'POST', body: { argv: ['sleep', '30'], timeoutMs: 60_000 } });
    const outcome = (await response.json()) as { result: Record<string, unknown> };
    assert.equal(outcome.result['timedOut'], true);
    assert.equal(outcome.result['exitCode'], 137);
    assert.equal(outcome.result['limitedBy'], 'contract.perCall.maxSeconds');
    assert.ok(Date.now() - begun < 10_000, 'killed at the contract limit, not the 60 s the call asked for');
    const viaCli = installation.cli(['exec', capped, '--', 'sleep', '30']);
    assert.equal(viaCli.code, 137);
    assert.match(viaCli.stderr, /ran past its timeout/);
    cliOk(['sessions', 'rm', id]);
    cliOk(['sessions', 'rm', capped]);
  });

  it('an ephemeral call during a suspend waits for it, then reads the disk the machine left', async () => {
    const id = cliOk(['sessions', 'create']).trim();
    cliOk(['exec', id, '--', 'sh', '-c', 'echo from-the-machine > /workspace/m.txt']);
    const suspending = installation.cliAsync(['sessions', 'suspend', id]);
    // The suspend has begun once its first step is in the audit log.
    for (let tries = 0; !(await api(installation, `/v1/sessions/${id}/audit`).then((r) => r.text())).includes('session.suspend-started'); tries += 1) {
      assert.ok(tries < 300, 'the suspend did not start');
      await sleep(20);
    }
    const ephemeral = await installation.cliAsync(['exec', id, '--ephemeral', '--', 'cat', '/workspace/m.txt']);
    assert.equal((await suspending).code, 0);
    assert.equal(ephemeral.code, 0, ephemeral.stderr);
    assert.equal(ephemeral.stdout, 'from-the-machine\n');
    assert.equal((await getSession(id)).state, 'suspended', 'the ephemeral call did not wake the machine');
    cliOk(['sessions', 'rm', id]);
  });

  it('a machine with a 2 s idle timeout pauses, then suspends, and each next call wakes it with memory and processes intact', async (t) => {
    const created = JSON.parse(cliOk(['sessions', 'create', '--idle-timeout', '2', '--json'])) as SessionJson;
    const id = created.id;
    assert.deepEqual(created.idle, { pauseAfterSeconds: 0.5, suspendAfterSeconds: 2, keepAwake: false });
    cliOk(['files', 'write', id, '/workspace/counter.py'], COUNTER);
    const pid = cliOk(['exec', id, '--detach', '--', 'python3', '/workspace/counter.py']).trim();
    assert.match(pid, /^\d+$/);
    const sandbox = await Sandbox.connect(id, connection());
    const read = async () => {
      const result = await sandbox.commands.run(`kill -0 ${pid} && cat /tmp/count`);
      assert.equal(result.exitCode, 0, `the counter process ${pid} is alive: ${result.stderr}`);
      return { count: Number(result.stdout), timing: result.timing };
    };
    // The counter has written its first count once /tmp/count exists.
    for (let tries = 0; (await sandbox.commands.run('test -s /tmp/count')).exitCode !== 0; tries += 1)
      assert.ok(tries < 100, 'the counter never wrote /tmp/count');
    const first = await read();

    await waitForState(id, 'paused', 5_000);
    const fromPause = await read();
    assert.ok(fromPause.count >= first.count, `the count went on from ${first.count} (got ${fromPause.count})`);
    assert.ok(fromPause.timing.resumeMs > 0, 'the wake-up shows in timing.resumeMs');

    await waitForState(id, 'suspended', 10_000);
    const asleep = await getSession(id);
    assert.equal(asleep.sandboxId, null);
    // The old sandbox is torn down in the background once the image is recorded: it goes within seconds.
    for (const deadline = Date.now() + 20_000; hostProcessesMatching(id).length > 0; await sleep(100)) {
      assert.ok(Date.now() < deadline, `a suspended machine holds no process on the host: ${hostProcessesMatching(id).join('; ')}`);
    }
    const fromSuspend = await read();
    assert.ok(fromSuspend.count >= fromPause.count, `the count went on from ${fromPause.count} (got ${fromSuspend.count}): same process, same memory`);
    assert.ok(fromSuspend.timing.resumeMs > fromPause.timing.resumeMs, 'a restore costs more than a thaw');
    t.diagnostic(
      `wake from paused: resumeMs ${fromPause.timing.resumeMs}; from suspended: resumeMs ${fromSuspend.timing.resumeMs}; exec start ${fromSuspend.timing.startMs} ms`,
    );

    const view = JSON.parse(cliOk(['sessions', 'get', id, '--json'])) as { meters: Record<string, number> };
    assert.ok((view.meters['pausedSeconds'] ?? 0) > 0, 'paused time is metered apart');
    assert.ok((view.meters['suspendedSeconds'] ?? 0) > 0, 'suspended time is metered apart');
    assert.ok((view.meters['idleFractionUnpaid'] ?? 0) > 0);
    await waitForState(id, 'paused', 5_000);
    cliOk(['sessions', 'keep-awake', id]);
    assert.equal((await getSession(id)).state, 'running', 'keep-awake wakes it');
    await sleep(3_000);
    assert.equal((await getSession(id)).state, 'running', 'and holds it up');
    cliOk(['sessions', 'rm', id]);
  });

  it('a service started with --detach answers through the exposed port, also after an idle suspend and resume', async (t) => {
    const id = cliOk(['sessions', 'create', '--idle-timeout', '2']).trim();
    cliOk(['files', 'write', id, '/workspace/hello.txt'], 'hello through the proxy\n');
    cliOk(['exec', id, '--detach', '--cwd', '/workspace', '--', 'python3', '-m', 'http.server', '8000']);
    const url = cliOk(['ports', 'expose', id, '8000']).trim();
    assert.equal(url, `${installation.url}/v1/sessions/${id}/ports/8000/`);
    const get = (path: string, token = installation.token) => fetch(`${url}${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    let answered: Response | undefined;
    for (let attempt = 0; attempt < 50 && answered?.status !== 200; attempt++) {
      answered = await get('hello.txt');
      if (answered.status !== 200) await sleep(200);
    }
    assert.equal(answered?.status, 200);
    assert.equal(await answered?.text(), 'hello through the proxy\n');
    assert.equal((await get('hello.txt', '')).status, 401, 'the port is behind the API token');

    await waitForState(id, 'suspended', 10_000);
    const started = Date.now();
    const afterSleep = await get('hello.txt');
    t.diagnostic(`first proxied request after an idle suspend: ${Date.now() - started} ms (resume included)`);
    assert.equal(afterSleep.status, 200);
    assert.equal(await afterSleep.text(), 'hello through the proxy\n');

    const notExposed = await fetch(`${installation.url}/v1/sessions/${id}/ports/8001/`, { headers: { authorization: `Bearer ${installation.token}` } });
    assert.equal(notExposed.status, 409);
    cliOk(['ports', 'expose', id, '8001']);
    const nothingListens = await fetch(`${installation.url}/v1/sessions/${id}/ports/8001/`, { headers: { authorization: `Bearer ${installation.token}` } });
    assert.equal(nothingListens.status, 502);
    assert.equal(((await nothingListens.json()) as { error: { code: string } }).error.code, 'PORT_UNREACHABLE');
    cliOk(['sessions', 'rm', id]);
  });

  it('live resize: 600 MB fails at 256 MB, succeeds after a resize to 1 GB, and a process started before keeps running', async () => {
    const id = cliOk(['sessions', 'create', '--contract', contractFile('small', { resources: { memoryMb: 256 } })]).trim();
    const holder = cliOk(['exec', id, '--detach', '--', 'python3', '-c', 'import time\nb = bytearray(100 * 1024 * 1024)\ntime.sleep(100000)']).trim();
    // gVisor dies whole on a cgroup OOM (pitfall 8b), so the allocation runs under an address-space
    // limit equal to the session's memory as the server reports it: at 256 MB it fails gracefully.
    const allocate = async () => {
      const { resources } = await getSession(id);
      return installation.cli([
        'exec',
        id,
        '--',
        'sh',
        '-c',
        `ulimit -v ${resources.memoryMb * 1024}; python3 -c "b = bytearray(600 * 1024 * 1024); print(len(b))"`,
      ]);
    };
    const small = await allocate();
    assert.equal(small.code, 1);
    assert.match(small.stderr, /MemoryError/);

    assert.match(cliOk(['sessions', 'resize', id, '--memory', '1G']), /memory=1024M/);
    const resized = await getSession(id);
    assert.equal(resized.resources.memoryMb, 1024);
    const big = await allocate();
    assert.equal(big.code, 0, `600 MB fits in 1 GB: ${big.stderr}`);
    assert.equal(big.stdout.trim(), String(600 * 1024 * 1024));
    assert.equal(installation.cli(['exec', id, '--', 'kill', '-0', holder]).code, 0, 'the process started before the resize still runs');
    assert.equal((await getSession(id)).sandboxId, resized.sandboxId, 'the same machine, never restarted');

    const beyond = installation.cli(['sessions', 'resize', id, '--memory', '2G']);
    assert.equal(beyond.code, 1);
    assert.match(beyond.stderr, /INVALID_ARGUMENTS.*ceiling of 1024 MB/);
    const below = installation.cli(['sessions', 'resize', id, '--memory', '64M']);
    assert.equal(below.code, 1);
    assert.match(below.stderr, /INVALID_STATE/);
    assert.equal((await getSession(id)).resources.memoryMb, 1024, 'refusals changed nothing');
    const audit = JSON.parse(cliOk(['audit', id, '--json'])) as { type: string }[];
    assert.equal(audit.filter((record) => record.type === 'session.resized').length, 1);
    cliOk(['sessions', 'rm', id]);
  });

  it('without the address-space limit, 600 MB at 256 MB hits the real cgroup limit: the driver reports the machine died', async () => {
    const id = cliOk(['sessions', 'create', '--contract', contractFile('oom', { resources: { memoryMb: 256 } })]).trim();
    const oom = installation.cli(['exec', id, '--', 'python3', '-c', 'b = bytearray(600 * 1024 * 1024)']);
    assert.notEqual(oom.code, 0);
    assert.match(oom.stderr, /SANDBOX_DIED/);
    cliOk(['sessions', 'rm', id]);
  });
});

async function api(installation: TestInstallation, path: string, init: { method?: string; body?: unknown } = {}): Promise<Response> {
  return fetch(`${installation.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${installation.token}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
