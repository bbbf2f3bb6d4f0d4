/**
 * Hostile suite: resource exhaustion. A session that forks, allocates,
 * fills its disk, its tmpfs or its inodes, floods its output, floods the
 * files API, runs 50 calls at once or outlives its timeout must stay inside
 * its own limits: the host and the other sessions keep working, the server's
 * memory stays bounded, and the session itself ends usable, or failed with
 * the cause named.
 *
 * A witness session runs beside the attackers; after each attack it must
 * still answer, and the host must still start a process.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { TestInstallation } from '../support/test-installation.js';
import { HostileApi, peakWhile, residentBytes, serverProcessId, waitFor } from '../support/hostile-kit.js';

const MiB = 1024 * 1024;
/** What the server may grow by while it passes hundreds of megabytes of a command's output: well under the output itself. */
const SERVER_GROWTH_LIMIT = 200 * MiB;
const PID_EXHAUSTION_TODO =
  'processes that left their group keep the process limit full until killed: `airlock sessions restart` is the way out today; the agent killing what outlives its command under pid exhaustion is not built';

describe('hostile: resource exhaustion stays inside the session', { timeout: 900_000 }, () => {
  let installation: TestInstallation;
  let api: HostileApi;
  let witness = '';
  /** default resources: floods, parallel calls, timeouts */
  let flood = '';
  let serverPid = 0;

  const keepAwake = { keepAwake: true };
  /** The witness and the host are fine after an attack. */
  const assertOthersFine = async (what: string): Promise<void> => {
    assert.equal(await api.sh(witness, 'cat /workspace/witness.txt'), 'witness\n', `the witness session answers after ${what}`);
    assert.equal(spawnSync('true').status, 0, `the host starts processes after ${what}`);
    const health = await fetch(`${installation.url}/healthz`);
    assert.equal(health.status, 200, `the server answers after ${what}`);
  };
  /** The session runs a command again once what an attack left behind is gone (or says why it cannot). */
  const assertUsableAgain = async (sessionId: string, what: string, timeoutMs = 120_000): Promise<void> => {
    let last = '';
    let attempt = 0;
    const usable = await waitFor(async () => {
      // A command substitution forks: a machine that can only exec is not usable. Each try differs (a comment),
      // so that waiting is not taken for a runaway loop of identical failing calls.
      attempt += 1;
      const next = await api.tool(sessionId, 'exec', { command: `echo $(echo usable) # try ${attempt}`, timeoutMs: 30_000 });
      if (next.code === 'ok' && next.result['stdout'] === 'usable\n') return true;
      if (next.code === 'RUNAWAY_DETECTED') throw new Error(`the session kept failing until the runaway breaker tripped`);
      const view = await api.session(sessionId);
      if (view.state !== 'running' && view.failure) return false;
      last = `${next.code} exit ${String(next.result['exitCode'])}: ${String(next.result['stderr'] ?? next.message).slice(0, 200)}`;
      return undefined;
    }, `the session to run a command again after ${what}`, timeoutMs).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; last answer: ${last}`);
    });
    assert.ok(usable !== undefined);
  };
  /** Bytes the session's disk image takes on the host. */
  const diskImageBytes = (sessionId: string): number => statSync(join(installation.dataDir, 'disks', sessionId, 'disk.ext4')).blocks * 512;

  before(async () => {
    installation = await TestInstallation.start();
    api = new HostileApi(installation);
    serverPid = serverProcessId(installation);
    [witness, flood] = await Promise.all([api.createSession({ version: 1, idle: keepAwake }), api.createSession({ version: 1, idle: keepAwake })]);
    await api.write(witness, '/workspace/witness.txt', 'witness\n');
  });

  after(async () => {
    await installation?.destroy();
  });

  it('a fork bomb is bounded by the process limit and killed with its command; the machine stays usable', async () => {
    const bomb = await api.createSession({ version: 1, idle: keepAwake, resources: { maxProcesses: 32 } });
    const forked = await api.tool(bomb, 'exec', {
      argv: ['python3', '-c', 'import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.05)'],
      timeoutMs: 5_000,
    });
    assert.equal(forked.code, 'ok', `${forked.code} ${forked.message}`);
    assert.equal(forked.result['timedOut'], true, 'the bomb ran until its timeout');
    await assertUsableAgain(bomb, 'a fork bomb');
    const count = Number((await api.sh(bomb, 'ls -d /proc/[0-9]* | wc -l')).trim());
    assert.ok(count < 32, `the bomb's processes are gone (${count} left)`);
    await assertOthersFine('a fork bomb');
    await api.terminate(bomb);
  });

  it('a fork bomb whose processes leave its process group does not leave the session unable to fork', { todo: PID_EXHAUSTION_TODO }, async () => {
    const bomb = await api.createSession({ version: 1, idle: keepAwake, resources: { maxProcesses: 32 } });
    const forked = await api.tool(bomb, 'exec', { command: 'while :; do setsid sleep 100000 & done 2>/dev/null', timeoutMs: 10_000 });
    assert.equal(forked.code, 'ok', `${forked.code} ${forked.message}`);
    const sleepers = ((await api.tool(bomb, 'files.list', { path: '/proc' })).result['entries'] as { name: string }[] | undefined) ?? [];
    assert.ok(sleepers.filter((entry) => /^\d+$/.test(entry.name)).length <= 32 + 8, 'the process limit bounds the bomb');
    await assertOthersFine('a fork bomb that left its process group');
    // What the bomb left holds the process limit until someone kills it: waiting longer would not help.
    await assertUsableAgain(bomb, 'a fork bomb that left its process group', 30_000);
    await api.terminate(bomb);
  });

  it('a memory hog stays inside its memory limit: its allocation fails, or its machine dies with an out-of-memory cause and the disk is kept', async () => {
    const hog = await api.createSession({ version: 1, resources: { memoryMb: 128 } });
    await api.write(hog, '/workspace/work.txt', 'work before the hog\n');
    const cgroup = join('/sys/fs/cgroup/memory/airlock', String((await api.session(hog))['sandboxId']));
    assert.equal(readFileSync(join(cgroup, 'memory.limit_in_bytes'), 'utf8').trim(), String(128 * MiB), 'the contract\'s memory is the machine\'s cgroup limit on the host');
    const allocated = await api.tool(hog, 'exec', { argv: ['python3', '-c', "chunks = []\nwhile True:\n    chunks.append(b'\\x01' * (16 << 20))"], timeoutMs: 60_000 });
    assert.ok(allocated.code !== 'ok' || allocated.result['exitCode'] !== 0, 'the hog did not end normally');
    const view = await api.session(hog);
    if (view.state === 'failed') {
      assert.match(view.failure?.message ?? '', /out of memory/, `the cause is named: ${JSON.stringify(view.failure)}`);
    } else {
      assert.ok(Number(readFileSync(join(cgroup, 'memory.failcnt'), 'utf8')) > 0, 'control: the hog reached the limit');
      assert.equal(await api.sh(hog, 'echo alive'), 'alive\n', 'the machine survived its hog');
    }
    assert.equal((await api.tool(hog, 'files.read', { path: '/workspace/work.txt' })).result['content'], 'work before the hog\n', 'the disk is kept');
    await assertOthersFine('a memory hog');
    await api.terminate(hog);
  });

  it('filling the disk gives DISK_FULL, takes no more host disk than the session\'s size, and clears up', async () => {
    const filler = await api.createSession({ version: 1, idle: keepAwake, resources: { diskMb: 64 } });
    await api.run(filler, 'dd if=/dev/zero of=/workspace/fill bs=1M count=200; dd if=/dev/zero of=/workspace/fill-tail bs=4k; dd if=/dev/zero of=/root/fill-root bs=4k', { timeoutMs: 120_000 });
    const full = await api.tool(filler, 'files.write', { path: '/workspace/after.txt', content: 'x'.repeat(MiB) });
    assert.equal(full.code, 'DISK_FULL', `${full.code} ${full.message}`);
    assert.match(full.message, /diskMb/, 'the message says how to get more');
    assert.ok(diskImageBytes(filler) <= 64 * MiB, `the disk image takes ${diskImageBytes(filler)} bytes on the host`);
    await assertOthersFine('a disk fill');
    for (const path of ['/workspace/fill', '/workspace/fill-tail']) assert.equal((await api.tool(filler, 'files.remove', { path })).code, 'ok');
    assert.equal((await api.tool(filler, 'files.write', { path: '/workspace/after.txt', content: 'usable again' })).code, 'ok', 'usable after cleanup');
    await api.terminate(filler);
  });

  it('filling /tmp (a tmpfs in the sandbox\'s memory) stays inside the session\'s memory limit', async () => {
    const filler = await api.createSession({ version: 1, resources: { memoryMb: 128 } });
    const filled = await api.tool(filler, 'exec', { command: 'dd if=/dev/zero of=/tmp/fill bs=1M count=1024', timeoutMs: 120_000 });
    const view = await api.session(filler);
    if (view.state === 'failed') assert.match(view.failure?.message ?? '', /out of memory/, `a dead machine names its cause: ${JSON.stringify(view.failure)}`);
    else {
      assert.notEqual(filled.result['exitCode'], 0, 'the tmpfs refused to grow past the memory limit');
      assert.equal(await api.sh(filler, 'rm /tmp/fill && echo cleared'), 'cleared\n');
    }
    await assertOthersFine('a tmpfs fill');
    await api.terminate(filler);
  });

  it('an output flood is cut to 1 MiB per stream, flagged truncated, and the server\'s memory stays bounded', async () => {
    const baseline = residentBytes(serverPid);
    const { value: flooded, peak } = await peakWhile(
      api.tool(flood, 'exec', { command: 'head -c 400000000 /dev/zero | tr "\\0" a; head -c 50000000 /dev/zero >&2', timeoutMs: 300_000 }),
      () => residentBytes(serverPid),
    );
    assert.equal(flooded.code, 'ok');
    assert.equal(flooded.result['stdoutTruncated'], true);
    assert.equal(flooded.result['stderrTruncated'], true);
    assert.equal(flooded.result['stdoutBytes'], 400_000_000, 'every byte was counted');
    assert.equal(flooded.result['stderrBytes'], 50_000_000);
    assert.equal(String(flooded.result['stdout']).length, MiB, 'the kept output is 1 MiB');
    assert.ok(peak - baseline < SERVER_GROWTH_LIMIT, `the server grew by ${Math.round((peak - baseline) / MiB)} MiB while passing 450 MB`);
  });

  it('an output flood streamed to a client that does not read keeps the server\'s memory bounded', async () => {
    const baseline = residentBytes(serverPid);
    const body = JSON.stringify({ command: 'head -c 300000000 /dev/zero; echo slow-reader-done > /workspace/slow-reader.txt', stream: true, timeoutMs: 120_000 });
    const socket = connect(installation.port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    socket.write(`POST /v1/sessions/${flood}/exec HTTP/1.1\r\nHost: 127.0.0.1:${installation.port}\r\nAuthorization: Bearer ${installation.token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    // Read the start of the answer (the control: the stream began), then read nothing more.
    const first = await new Promise<string>((resolve) => {
      socket.once('data', (chunk: Buffer) => {
        socket.pause();
        resolve(chunk.toString('latin1'));
      });
    });
    assert.match(first, /^HTTP\/1\.1 200/, `control: the streamed exec started: ${first.slice(0, 200)}`);
    // Either the server reads it all (then the command finishes and the server holds what the client did not
    // read), or it stops reading when the client does (then the command stalls), or it gives up on the client
    // and stops the command (then the flooding process is gone without finishing): watch until one happens.
    let lastWritten = -1;
    // (Probes that succeed: a poll of failing calls would trip the session's runaway breaker.)
    const settled = waitFor(async () => {
      const probe = (await api.sh(flood, 'if [ -e /workspace/slow-reader.txt ]; then echo finished; else for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = head ] && sed -n "s/^wchar: //p" $p/io; done; fi; true')).trim();
      if (probe === 'finished') return 'finished';
      // The stream began with head's output, so head existed: gone now without the marker means it was stopped.
      if (probe === '') return 'stopped';
      const written = Number(probe || -1);
      const stalled = written > 0 && written === lastWritten;
      lastWritten = written;
      return stalled ? 'stalled' : undefined;
    }, 'the flooding command to finish or stall', 180_000);
    const { peak } = await peakWhile(settled, () => residentBytes(serverPid));
    socket.destroy();
    assert.ok(peak - baseline < SERVER_GROWTH_LIMIT, `the server grew by ${Math.round((peak - baseline) / MiB)} MiB holding 300 MB for a client that does not read`);
  });

  it('an upload flood through the files API: an oversized body is refused, concurrent uploads fill only the session\'s disk', async () => {
    const target = await api.createSession({ version: 1, idle: keepAwake, resources: { diskMb: 64 } });
    const tooLarge = await api.tool(target, 'files.write', { path: '/workspace/huge.bin', content: 'a'.repeat(40 * MiB) });
    assert.equal(tooLarge.code, 'PAYLOAD_TOO_LARGE', `${tooLarge.status} ${tooLarge.code}`);
    // Most of the disk is taken first (fast, from inside), so that a few uploads reach its end.
    await api.sh(target, 'dd if=/dev/zero of=/workspace/prefill bs=1M count=30 2>/dev/null');
    const content = 'u'.repeat(16 * MiB);
    // One after another until the disk is full: the session's size is the limit, not the host's disk.
    const sequential: string[] = [];
    for (let index = 0; index < 4 && !sequential.includes('DISK_FULL'); index++) {
      const answer = await api.tool(target, 'files.write', { path: `/workspace/upload-${index}.bin`, content });
      assert.ok(answer.code === 'ok' || answer.code === 'DISK_FULL', `upload ${index} answered ${answer.status} ${answer.code} ${answer.message}`);
      sequential.push(answer.code);
    }
    assert.ok(sequential[0] === 'ok' && sequential.at(-1) === 'DISK_FULL', `uploads landed until the disk was full: ${sequential.join(' ')}`);
    // Then a burst at once on the full disk.
    const burst = await Promise.all(Array.from({ length: 4 }, (_, index) => api.tool(target, 'files.write', { path: `/workspace/burst-${index}.bin`, content })));
    for (const answer of burst) assert.ok(answer.code === 'ok' || answer.code === 'DISK_FULL', `a burst upload answered ${answer.status} ${answer.code} ${answer.message}`);
    const listed = ((await api.tool(target, 'files.list', { path: '/workspace' })).result['entries'] as { name: string; size: number }[]).map((entry) => entry.name);
    assert.ok(!listed.includes('huge.bin'), 'the refused body wrote nothing');
    assert.ok(listed.every((name) => !name.startsWith('.airlock-write')), `no temp file of a failed upload is left: ${listed.join(' ')}`);
    assert.ok(diskImageBytes(target) <= 64 * MiB, `the disk image takes ${diskImageBytes(target)} bytes on the host`);
    await assertOthersFine('an upload flood');
    assert.equal((await api.tool(target, 'files.remove', { path: '/workspace/upload-0.bin' })).code, 'ok');
    assert.equal((await api.tool(target, 'files.write', { path: '/workspace/after.txt', content: 'usable again' })).code, 'ok', 'usable after cleanup');
    await api.terminate(target);
  });

  it('50 calls at once all run, each with its own output and exit code', async () => {
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, index) => api.tool(flood, 'exec', { command: `echo out-${index}; echo err-${index} >&2; exit ${index % 7}`, timeoutMs: 120_000 })),
    );
    answers.forEach((answer, index) => {
      assert.equal(answer.code, 'ok', `call ${index}: ${answer.status} ${answer.code} ${answer.message}`);
      assert.equal(answer.result['stdout'], `out-${index}\n`, `call ${index}'s stdout`);
      assert.equal(answer.result['stderr'], `err-${index}\n`, `call ${index}'s stderr`);
      assert.equal(answer.result['exitCode'], index % 7, `call ${index}'s exit code`);
    });
    await assertOthersFine('50 parallel calls');
  });

  it('running out of inodes gives DISK_FULL and clears up', async () => {
    const target = await api.createSession({ version: 1, idle: keepAwake, resources: { diskMb: 64 } });
    const made = await api.python<{ created: number; error: string }>(
      target,
      "import errno, json, os\nos.makedirs('/workspace/many', exist_ok=True)\nn = 0\ntry:\n    while True:\n        os.close(os.open('/workspace/many/%d' % n, os.O_CREAT | os.O_WRONLY))\n        n += 1\nexcept OSError as e:\n    print(json.dumps({'created': n, 'error': errno.errorcode[e.errno]}))",
    );
    assert.equal(made.error, 'ENOSPC', `inodes ran out after ${made.created} files`);
    const full = await api.tool(target, 'files.write', { path: '/workspace/after.txt', content: 'x' });
    assert.equal(full.code, 'DISK_FULL', `${full.code} ${full.message}`);
    assert.equal((await api.tool(target, 'files.remove', { path: '/workspace/many', recursive: true })).code, 'ok');
    assert.equal((await api.tool(target, 'files.write', { path: '/workspace/after.txt', content: 'x' })).code, 'ok', 'usable after cleanup');
    await assertOthersFine('inode exhaustion');
    await api.terminate(target);
  });

  it('a command past its timeout is killed with everything it started, even what ignores SIGTERM', async () => {
    const late = await api.tool(flood, 'exec', { command: 'trap "" TERM; (trap "" TERM HUP; sleep 777) & sleep 778', timeoutMs: 2_000 });
    assert.equal(late.code, 'ok');
    assert.equal(late.result['timedOut'], true);
    assert.notEqual(late.result['exitCode'], 0);
    const left = await waitFor(async () => {
      const listing = await api.sh(flood, 'ps -eo args');
      return /sleep 77[78]/.test(listing) ? undefined : listing;
    }, 'the timed-out command\'s processes to be gone', 30_000);
    assert.doesNotMatch(left, /sleep 77[78]/);
  });

  it('a per-call command asking for more time than the contract allows is stopped at the contract\'s ceiling', async () => {
    const bounded = await api.createSession({ version: 1, perCall: { maxSeconds: 3 } });
    const late = await api.tool(bounded, 'exec', { command: 'sleep 60', timeoutMs: 60_000, ephemeral: true });
    assert.equal(late.code, 'ok', `${late.code} ${late.message}`);
    assert.equal(late.result['timedOut'], true);
    assert.equal(late.result['limitedBy'], 'contract.perCall.maxSeconds');
    await api.terminate(bounded);
  });

  it('reading a FIFO through the files API ends on its own and does not hold up the session\'s other calls', async () => {
    await api.sh(flood, 'rm -f /workspace/fifo && mkfifo /workspace/fifo');
    const stuck = api.tool(flood, 'files.read', { path: '/workspace/fifo' });
    const meanwhile = await api.tool(flood, 'exec', { command: 'echo meanwhile' });
    assert.equal(meanwhile.result['stdout'], 'meanwhile\n', 'another call ran while the read waited');
    const ended = await stuck;
    assert.ok(ended.code !== 'ok' || ended.result['content'] === '', `the read of a FIFO nobody writes returns nothing: ${ended.code}`);
  });

  it('reading an endless device through the files API is bounded by maxBytes', async () => {
    const zero = await api.tool(flood, 'files.read', { path: '/dev/zero', maxBytes: 4096, encoding: 'base64' });
    if (zero.code === 'ok') assert.ok(Buffer.from(String(zero.result['content']), 'base64').length <= 4096, 'at most maxBytes');
    else assert.ok(zero.status >= 400 && zero.status < 500, `${zero.status} ${zero.code}`);
    const random = await api.tool(flood, 'files.read', { path: '/dev/urandom', maxBytes: 1000, encoding: 'base64' });
    if (random.code === 'ok') assert.ok(Buffer.from(String(random.result['content']), 'base64').length <= 1000);
  });
});
