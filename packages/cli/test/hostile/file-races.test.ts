/**
 * Hostile suite: races against the files API (issue 12, "Why" point 4). A
 * process in the session swaps a directory and a symlink every ~2 ms while
 * the files API writes into the directory and reads an allowed file; and
 * 3,000 symlinks named like the API's predictable temp file wait in an
 * allowed directory. No write may land in a denyWrite directory, no read may
 * return a denyRead file, no planted link may redirect a write.
 *
 * The API checks a path and then uses it in a second step, but the agent
 * runs that step with symlinks refused (a swapped directory fails the call,
 * FILE_CHANGED, instead of redirecting it), and the rules hold anyway: the
 * sandbox's mounts refuse a write into the denyWrite dir and hide the
 * denyRead file whatever path the call ends up on (issue 12 item 3). The
 * write's temp file has a random name nothing holds, opened with O_EXCL.
 * Each carries a positive control (the swapper swapped, some calls went
 * through) so that it passes only by holding, not by doing nothing. The
 * session's breaker is set high so that one attempt's failures do not stop
 * the next one's calls.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestInstallation } from '../support/test-installation.js';
import { HostileApi, needle, pooled, waitFor } from '../support/hostile-kit.js';

const VICTIM = 'the victim in the denyWrite dir\n';

/**
 * Swaps `a` with `b` (a symlink) until /workspace/race/stop exists: `a` is the real entry, then the
 * link, then the real one again, 2 ms each. Renames are atomic, so `a` is always one or the other.
 */
const SWAPPER = `import os, sys, time
os.chdir('/workspace/race')
a, b, hold = sys.argv[1], sys.argv[2], sys.argv[1] + '.hold'
swaps = 0
while not os.path.exists('stop'):
    try:
        os.rename(a, hold); os.rename(b, a)
        time.sleep(0.002)
        os.rename(a, b); os.rename(hold, a)
        time.sleep(0.002)
        swaps += 2
    except OSError:
        # A call may have made \`a\` anew in a gap (mkdir -p); swapping then fails, but the swapper never dies.
        time.sleep(0.002)
with open('swaps-' + a, 'w') as handle:
    handle.write(str(swaps))
`;

describe('hostile: races and planted symlinks cannot steer the files API past the contract', { timeout: 600_000 }, () => {
  let installation: TestInstallation;
  let api: HostileApi;
  let session = '';
  const secret = needle('raced-secret');

  const onHost = (...parts: string[]): string => join(installation.dataDir, 'disks', session, 'mnt', 'workspace', ...parts);
  /** Runs the swapper of `a` and `b` while `calls` run, then stops it; returns the calls' results and the swap count. */
  const whileSwapping = async <T>(a: string, b: string, calls: () => Promise<T>): Promise<{ value: T; swaps: number }> => {
    rmSync(onHost('race', 'stop'), { force: true });
    const started = await api.tool(session, 'exec', { argv: ['python3', '-c', SWAPPER, a, b], detach: true });
    assert.equal(started.code, 'ok', `the swapper started: ${started.code} ${started.message}`);
    const value = await calls();
    writeFileSync(onHost('race', 'stop'), '');
    const swaps = await waitFor(() => (existsSync(onHost('race', `swaps-${a}`)) ? Number(readFileSync(onHost('race', `swaps-${a}`), 'utf8')) : undefined), 'the swapper to stop');
    return { value, swaps };
  };

  before(async () => {
    installation = await TestInstallation.start();
    api = new HostileApi(installation);
    session = await api.createSession({ version: 1, idle: { keepAwake: true }, guard: { maxIdenticalFailures: 1000 }, filesystem: { denyWrite: ['/workspace/locked'], denyRead: ['/workspace/secret'] } });
    // Everything is laid out from the host, so that nothing here depends on the rules being bypassable.
    for (const dir of ['secret', 'locked', 'race/target', 'open']) mkdirSync(onHost(dir), { recursive: true });
    writeFileSync(onHost('secret', 'key'), secret.value);
    writeFileSync(onHost('locked', 'victim'), VICTIM);
    writeFileSync(onHost('race', 'allowed.txt'), 'allowed');
    symlinkSync('/workspace/locked', onHost('race', 'alt-dir'));
    symlinkSync('/workspace/secret/key', onHost('race', 'alt-file'));
    assert.equal((await api.tool(session, 'files.read', { path: '/workspace/secret/key' })).code, 'POLICY_DENIED', 'control: the rules are in force');
  });

  after(async () => {
    await installation?.destroy();
  });

  it('40 writes into a directory swapped with a symlink to a denyWrite dir land none there', async () => {
    const { value: answers, swaps } = await whileSwapping('target', 'alt-dir', () =>
      pooled(Array.from({ length: 40 }, (_, index) => index), (index) => api.tool(session, 'files.write', { path: `/workspace/race/target/w-${index}.txt`, content: `w${index}` })),
    );
    assert.ok(swaps >= 20, `control: the swapper swapped (${swaps} times) while the calls ran`);
    const landed = ['target', 'target.hold'].flatMap((dir) => (existsSync(onHost('race', dir)) && lstatSync(onHost('race', dir)).isDirectory() ? readdirSync(onHost('race', dir)) : []));
    assert.ok(landed.length > 0, `control: some writes went through (${answers.map((answer) => answer.code).join(' ')})`);
    assert.deepEqual(readdirSync(onHost('locked')), ['victim'], 'nothing landed in the denyWrite dir');
    assert.equal(readFileSync(onHost('locked', 'victim'), 'utf8'), VICTIM);
  });

  it('40 reads of an allowed file swapped with a symlink to a denyRead file return the secret none of the times', async () => {
    const { value: answers, swaps } = await whileSwapping('allowed.txt', 'alt-file', () =>
      pooled(Array.from({ length: 40 }, (_, index) => index), () => api.tool(session, 'files.read', { path: '/workspace/race/allowed.txt' })),
    );
    assert.ok(swaps >= 20, `control: the swapper swapped (${swaps} times) while the calls ran`);
    assert.ok(answers.some((answer) => answer.result['content'] === 'allowed'), `control: some reads went through (${answers.map((answer) => answer.code).join(' ')})`);
    const leaked = answers.filter((answer) => JSON.stringify(answer.body).includes(secret.value));
    assert.equal(leaked.length, 0, `${leaked.length} of 40 reads returned the denyRead file`);
  });

  it('3,000 planted symlinks named like a predictable temp file do not redirect a write into a denyWrite file', async () => {
    for (let pid = 1; pid <= 3000; pid++) symlinkSync('/workspace/locked/victim', onHost('open', `.airlock-write.${pid}`));
    const written = await api.tool(session, 'files.write', { path: '/workspace/open/note.txt', content: 'an innocent note' });
    assert.equal(written.code, 'ok', `control: the write itself is allowed: ${written.code} ${written.message}`);
    assert.equal(readFileSync(onHost('locked', 'victim'), 'utf8'), VICTIM, 'the denyWrite file is unchanged');
    assert.ok(lstatSync(onHost('open', 'note.txt')).isFile(), 'the note is a file of its own, not a planted link');
  });
});
