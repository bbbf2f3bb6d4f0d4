/**
 * Issue 2's "done when", end to end through the CLI against a real server
 * process and the real gVisor driver.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { TestInstallation, hostProcessesMatching, pathsMatching } from '../support/test-installation.js';

const COUNTER = [
  'import time, os',
  'i = 0',
  'while True:',
  '    i += 1',
  "    open('/workspace/count.tmp', 'w').write(str(i)); os.replace('/workspace/count.tmp', '/workspace/count')",
  '    time.sleep(0.05)',
].join('\n');

/** Waits until `probe` answers a value that `done` accepts (a condition, never a fixed sleep). */
async function eventually<T>(probe: () => T, done: (value: T) => boolean, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${String(value)})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The counter's value, or 0 before it wrote its file. */
function countOrZero(installation: TestInstallation, id: string): number {
  const read = installation.cli(['files', 'read', id, '/workspace/count']);
  return read.code === 0 ? Number.parseInt(read.stdout, 10) || 0 : 0;
}

function readCount(installation: TestInstallation, id: string): number {
  const read = installation.cli(['files', 'read', id, '/workspace/count']);
  assert.equal(read.code, 0, read.stderr);
  return Number.parseInt(read.stdout, 10);
}

describe('a session on gVisor persists across suspend, a server crash and resume', () => {
  let installation: TestInstallation;
  before(async () => {
    installation = await TestInstallation.start();
  });
  after(async () => {
    await installation?.destroy();
  });

  it('keeps a background process counting in memory, and files, across suspend → kill -9 → restart → resume; terminate leaves nothing', async () => {
    const created = installation.cli(['sessions', 'create', '--json']);
    assert.equal(created.code, 0, created.stderr);
    const session = JSON.parse(created.stdout) as { id: string; state: string };
    assert.equal(session.state, 'running');
    const id = session.id;

    const echo = installation.cli(['exec', id, '--', 'sh', '-c', 'echo hello; echo oops >&2; exit 3']);
    assert.equal(echo.code, 3);
    assert.equal(echo.stdout, 'hello\n');
    assert.match(echo.stderr, /oops/);

    const written = installation.cli(['files', 'write', id, '/workspace/counter.py'], { input: COUNTER });
    assert.equal(written.code, 0, written.stderr);
    const started = installation.cli(['exec', id, '--', 'sh', '-c', 'nohup python3 /workspace/counter.py >/dev/null 2>&1 &']);
    assert.equal(started.code, 0, started.stderr);
    await eventually(
      () => countOrZero(installation, id),
      (count) => count > 5,
      'the counter to run',
    );
    installation.cli(['files', 'write', id, '/workspace/notes.txt'], { input: 'written before suspend\n' });
    const beforeSuspend = readCount(installation, id);
    assert.ok(beforeSuspend > 5, `counter should be running, got ${beforeSuspend}`);

    const suspended = installation.cli(['sessions', 'suspend', id, '--json']);
    assert.equal(suspended.code, 0, suspended.stderr);
    const suspendedView = JSON.parse(suspended.stdout) as { state: string; sandboxId: string | null };
    assert.equal(suspendedView.state, 'suspended');
    assert.equal(suspendedView.sandboxId, null);
    // The old sandbox is torn down in the background once the image is recorded: it goes within seconds.
    await eventually(
      () => hostProcessesMatching(id),
      (left) => left.length === 0,
      'a suspended session to hold no sandbox process on the host',
      20_000,
    );
    const atSuspend = readCountFromDisk(installation, id);

    await installation.crashServer();
    await installation.startServer();

    const afterRestart = JSON.parse(installation.cli(['sessions', 'get', id, '--json']).stdout) as { state: string };
    assert.equal(afterRestart.state, 'suspended');
    const resumed = installation.cli(['sessions', 'resume', id, '--json']);
    assert.equal(resumed.code, 0, resumed.stderr);
    await eventually(
      () => readCount(installation, id),
      (count) => count > atSuspend,
      'the counter to go on after the resume',
    );
    const afterResume = readCount(installation, id);
    assert.ok(afterResume > atSuspend, `the counter continued from ${atSuspend} (got ${afterResume}), not restarted`);
    assert.ok(afterResume >= beforeSuspend);
    const ps = installation.cli(['exec', id, '--', 'sh', '-c', 'ps -eo pid,args | grep [c]ounter.py']);
    assert.equal(ps.code, 0, 'the same python process is running after resume');
    assert.equal(installation.cli(['files', 'read', id, '/workspace/notes.txt']).stdout, 'written before suspend\n');

    const removed = installation.cli(['sessions', 'rm', id, '--json']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal((JSON.parse(removed.stdout) as { state: string }).state, 'terminated');
    assert.deepEqual(pathsMatching(installation.dataDir, id), [], 'nothing of the session stays on disk');
    assert.deepEqual(hostProcessesMatching(id), []);
    const history = installation.cli(['audit', id, '--json']);
    const types = (JSON.parse(history.stdout) as { type: string }[]).map((record) => record.type);
    for (const type of ['session.created', 'session.started', 'session.suspended', 'session.resumed', 'session.terminated'])
      assert.ok(types.includes(type), `history has ${type}`);
    assert.equal(installation.cli(['exec', id, '--', 'true']).code, 1, 'exec on a terminated session is refused');
  });

  it('marks a session whose machine died as failed, and still serves its files per call', () => {
    const id = installation.cli(['sessions', 'create']).stdout.trim();
    assert.equal(installation.cli(['files', 'write', id, '/workspace/work.txt'], { input: 'hours of work\n' }).code, 0);
    installation.cli(['exec', id, '--', 'sh', '-c', 'kill -9 1; sleep 5']);
    const refused = installation.cli(['exec', id, '--', 'true']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /init process ended/);
    const info = JSON.parse(installation.cli(['sessions', 'get', id, '--json']).stdout) as { state: string; failure: { code: string } | null };
    assert.equal(info.state, 'failed');
    assert.equal(info.failure?.code, 'SANDBOX_DIED');
    const again = installation.cli(['exec', id, '--', 'true']);
    assert.match(again.stderr, /INVALID_STATE.*Its disk is kept/s);
    const read = installation.cli(['files', 'read', id, '/workspace/work.txt']);
    assert.equal(read.stdout, 'hours of work\n', read.stderr);
    const listed = installation.cli(['exec', id, '--ephemeral', '--', 'ls', '/workspace']);
    assert.match(listed.stdout, /^work\.txt$/m, listed.stderr);
    assert.equal(installation.cli(['sessions', 'rm', id]).code, 0);
  });

  it('never reaches a host file through a symlink or .. in the files API', () => {
    const hostSecret = `/tmp/airlock-host-secret-${process.pid}`;
    writeFileSync(hostSecret, 'HOST SECRET\n');
    try {
      const id = installation.cli(['sessions', 'create']).stdout.trim();
      assert.equal(installation.cli(['exec', id, '--', 'ln', '-s', hostSecret, '/workspace/escape']).code, 0);
      assert.equal(installation.cli(['exec', id, '--', 'ln', '-s', '/', '/workspace/root']).code, 0);
      for (const path of ['/workspace/escape', '/workspace/root' + hostSecret, `../../..${hostSecret}`, hostSecret]) {
        const read = installation.cli(['files', 'read', id, path]);
        assert.notEqual(read.code, 0, `reading ${path} must fail`);
        assert.doesNotMatch(read.stdout, /HOST SECRET/);
        assert.match(read.stderr, /FILE_NOT_FOUND/);
      }
      const write = installation.cli(['files', 'write', id, '/workspace/root' + hostSecret], { input: 'overwritten' });
      assert.equal(readFileSync(hostSecret, 'utf8'), 'HOST SECRET\n', `the host file is untouched (${write.stderr})`);
      const inside = installation.cli(['exec', id, '--', 'cat', hostSecret]);
      assert.equal(inside.stdout, write.code === 0 ? 'overwritten' : '', 'a write through the symlink lands inside the sandbox only');
      installation.cli(['sessions', 'rm', id]);
    } finally {
      rmSync(hostSecret, { force: true });
    }
  });

  it('answers bad input with clear errors and changes nothing', async () => {
    assert.match(installation.cli(['sessions', 'get', 'ses_doesnotexist']).stderr, /SESSION_NOT_FOUND/);
    assert.match(installation.cli(['sessions', 'create', '--image', 'no-such-image']).stderr, /IMAGE_NOT_FOUND/);
    const id = installation.cli(['sessions', 'create']).stdout.trim();
    assert.match(installation.cli(['sessions', 'resume', id]).stderr, /INVALID_STATE/);
    assert.equal(installation.cli(['sessions', 'suspend', id]).code, 0);
    assert.match(installation.cli(['sessions', 'suspend', id]).stderr, /INVALID_STATE/);
    const malformed = await fetch(`${installation.url}/v1/sessions/${id}/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${installation.token}`, 'content-type': 'application/json' },
      body: '{"argv": [',
    });
    assert.equal(malformed.status, 400);
    assert.equal(((await malformed.json()) as { error: { code: string } }).error.code, 'INVALID_REQUEST');
    const oversized = await postRaw(
      `${installation.url}/v1/sessions/${id}/tools/files.write`,
      installation.token,
      JSON.stringify({ path: '/workspace/big', content: 'x'.repeat(40 * 1024 * 1024) }),
    );
    assert.equal(oversized.status, 413);
    assert.equal(JSON.parse(oversized.body).error.code, 'PAYLOAD_TOO_LARGE');
    const badArgs = await fetch(`${installation.url}/v1/sessions/${id}/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${installation.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ argv: 'not-a-list' }),
    });
    assert.equal(badArgs.status, 400);
    const badBody = (await badArgs.json()) as { error: { code: string; details: { field: string } } };
    assert.equal(badBody.error.code, 'INVALID_ARGUMENTS');
    assert.equal(badBody.error.details.field, 'argv');
    const unauthenticated = await fetch(`${installation.url}/v1/sessions`);
    assert.equal(unauthenticated.status, 401);
    const state = JSON.parse(installation.cli(['sessions', 'get', id, '--json']).stdout) as { state: string };
    assert.equal(state.state, 'suspended', 'bad requests changed nothing');
    assert.equal((await fetch(`${installation.url}/healthz`)).status, 200, 'the server keeps serving');
    installation.cli(['sessions', 'rm', id]);
  });
});

function readCountFromDisk(installation: TestInstallation, id: string): number {
  // While suspended, the workspace lives on the session disk on the host; the counter file is there.
  const file = `${installation.dataDir}/disks/${id}/mnt/workspace/count`;
  return existsSync(file) ? Number.parseInt(readFileSync(file, 'utf8'), 10) : 0;
}

/**
 * POSTs a body with node:http and keeps the answer even when the server stops
 * reading early and resets the connection (as it may for a 413).
 */
function postRaw(url: string, token: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const req = request(
      url,
      { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        const done = () => {
          if (settled) return;
          settled = true;
          resolve({ status: res.statusCode ?? 0, body: text });
        };
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', done);
        res.on('close', done);
        res.on('error', done);
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE' || error.code === 'ECONNRESET') {
        // the answer may already be on its way; give it a moment
        setTimeout(() => {
          if (!settled) {
            settled = true;
            reject(new Error(`the server reset the connection without an answer (${error.code})`));
          }
        }, 2000);
        return;
      }
      settled = true;
      reject(error);
    });
    req.end(body);
  });
}
