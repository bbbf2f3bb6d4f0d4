/**
 * Conformance cases about `driver.files` and the commands core runs beside
 * them: every operation, binary content, and the hostile paths a session's
 * own processes can set up: symlinks out of the sandbox, "..", a symlink
 * swapped in while calls run, planted temp-file names, long names and 2,040
 * components. Each must end inside the sandbox or in a clear error, never on
 * the host and never in a crash. One sandbox serves all.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import type { SandboxHandle, SandboxSpec } from '../../core/sandbox-driver.js';
import { run, sh, shOk, skipWithoutCommands, type ConformanceContext } from './conformance-context.js';

/** Symlinks planted through the host's view of /workspace; a driver without one plants fewer from inside (one process each). */
const PLANTED_FROM_HOST = 3000;
const PLANTED_FROM_INSIDE = 300;

/** Registers the file cases; they share one sandbox. */
export function fileCases(getContext: () => ConformanceContext): void {
  describe('files', () => {
    let handle: SandboxHandle;
    let spec: SandboxSpec;
    const context = (): ConformanceContext => getContext();
    const files = () => context().driver.files;

    before(async () => {
      spec = await context().newSpec();
      handle = await context().driver.start(spec);
    });
    after(async () => {
      if (handle) await context().driver.destroy(handle);
    });

    it('writes and reads binary content intact, whole and in parts', async () => {
      const content = Buffer.concat([Buffer.from([...Array(256).keys()]), randomBytes(200_000)]);
      await files().write(handle, '/workspace/binary/deep/blob.bin', content, { createParents: true });
      const read = await files().read(handle, '/workspace/binary/deep/blob.bin', { maxBytes: 1024 * 1024 });
      assert.equal(read.size, content.length);
      assert.equal(read.truncated, false);
      assert.ok(read.content.equals(content), 'the file came back changed');
      const partial = await files().read(handle, '/workspace/binary/deep/blob.bin', { maxBytes: 10, offset: 250 });
      assert.deepEqual([partial.truncated, partial.content], [true, content.subarray(250, 260)]);
      assert.equal((await files().stat(handle, '/workspace/binary/deep/blob.bin')).size, content.length);
      await files().remove(handle, '/workspace/binary', { recursive: true });
      await assert.rejects(files().stat(handle, '/workspace/binary'), { code: 'FILE_NOT_FOUND' });
    });

    it('writes, reads, stats, lists, creates, renames and removes, seen the same by commands and the host', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      await files().write(handle, '/workspace/f/a.txt', Buffer.from('from the API'), { createParents: true });
      assert.equal(await shOk(context().driver, handle, 'cat /workspace/f/a.txt'), 'from the API');
      const hostDir = context().workspaceHostDir?.(spec);
      if (hostDir) assert.equal(await readFile(join(hostDir, 'f/a.txt'), 'utf8'), 'from the API');
      await shOk(context().driver, handle, 'printf 0123456789 > /etc/digits && chmod 640 /etc/digits && ln -s digits /etc/digits-link');
      assert.deepEqual(await files().read(handle, '/etc/digits', { maxBytes: 3, offset: 2 }), { content: Buffer.from('234'), size: 10, truncated: true });
      assert.equal((await files().read(handle, '/etc/digits-link', { maxBytes: 20 })).content.toString(), '0123456789');
      const info = await files().stat(handle, '/etc/digits');
      assert.deepEqual([info.type, info.size, info.mode, info.path], ['file', 10, '0640', '/etc/digits']);
      const link = await files().stat(handle, '/etc/digits-link');
      assert.deepEqual([link.type, link.target], ['symlink', 'digits']);
      await files().write(handle, '/etc/digits', Buffer.from('new'), { createParents: false });
      assert.equal((await files().stat(handle, '/etc/digits')).mode, '0640', 'a replaced file keeps its mode');
      assert.deepEqual(await files().mkdir(handle, '/workspace/f/x/y'), { created: true });
      await files().rename(handle, '/workspace/f/a.txt', '/workspace/f/x/y/b.txt');
      const listed = await files().list(handle, '/workspace/f/x/y');
      assert.deepEqual(
        listed.map((entry) => [entry.name, entry.path, entry.type]),
        [['b.txt', '/workspace/f/x/y/b.txt', 'file']],
      );
      assert.equal(await files().canonical(handle, '/etc/digits-link', { followLast: true }), '/etc/digits');
      assert.equal(await files().canonical(handle, '/workspace/f/../f/missing/z', { followLast: true }), '/workspace/f/missing/z');
      await files().remove(handle, '/workspace/f', { recursive: true });
      assert.equal((await sh(context().driver, handle, 'test -e /workspace/f')).exitCode, 1);
      await assert.rejects(files().read(handle, '/workspace/f', { maxBytes: 1 }), { code: 'FILE_NOT_FOUND' });
      await assert.rejects(files().read(handle, '/etc', { maxBytes: 1 }), { code: 'IS_A_DIRECTORY' });
      await assert.rejects(files().remove(handle, '/etc', { recursive: false }), { code: 'IS_A_DIRECTORY' });
      await assert.rejects(files().list(handle, '/etc/digits'), { code: 'NOT_A_DIRECTORY' });
    });

    it('resolves paths with the sandbox’s own view: canonical paths through symlinks and ".." stay inside it', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      await shOk(context().driver, handle, 'mkdir -p /workspace/links && ln -sfn /etc /workspace/links/etc && ln -sfn ../../../.. /workspace/links/up');
      assert.equal(await files().canonical(handle, '/workspace/links/etc/passwd', { followLast: true }), '/etc/passwd');
      assert.equal(await files().canonical(handle, '/workspace/links/up/etc/passwd', { followLast: true }), '/etc/passwd');
      assert.equal(await files().canonical(handle, '/workspace/links/etc', { followLast: false }), '/workspace/links/etc');
      const passwd = await files().read(handle, '/workspace/links/up/etc/passwd', { maxBytes: 4096 });
      assert.match(passwd.content.toString(), /^root:/m, 'the sandbox read its own /etc/passwd');
      assert.ok(!passwd.content.toString().includes(context().hostSecret.content));
    });

    it('keeps symlinks and ".." inside the sandbox: the host file they name is never reached', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const secret = context().hostSecret;
      await shOk(
        context().driver,
        handle,
        `mkdir -p /workspace/esc && ln -sf ${secret.path} /workspace/esc/abs && ln -sf ../../../../../../../..${secret.path} /workspace/esc/rel && ln -sfn / /workspace/esc/root`,
      );
      for (const path of ['/workspace/esc/abs', '/workspace/esc/rel', `/workspace/esc/root${secret.path}`, `/../../../../..${secret.path}`]) {
        await assert.rejects(files().read(handle, path, { maxBytes: 4096 }), { code: 'FILE_NOT_FOUND' }, path);
      }
      await files().write(handle, '/workspace/esc/abs', Buffer.from('replaced'), { createParents: false });
      assert.equal(await readFile(secret.path, 'utf8'), secret.content, 'a write through a link touched the host');
      assert.equal((await files().stat(handle, '/workspace/esc/abs')).type, 'file', 'the link itself was replaced');
      await shOk(context().driver, handle, 'ln -sf loop-b /workspace/esc/loop-a && ln -sf loop-a /workspace/esc/loop-b');
      await assert.rejects(files().read(handle, '/workspace/esc/loop-a', { maxBytes: 1 }), { code: 'INVALID_ARGUMENTS' });
    });

    it('with symlinks refused, a directory swapped for a symlink while calls run never redirects a write', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      // A script in the sandbox swaps a directory and a symlink to a "denied" directory as fast as it can.
      await shOk(context().driver, handle, 'mkdir -p /workspace/race/allowed /workspace/race/denied');
      const swapper = sh(
        context().driver,
        handle,
        'cd /workspace/race; i=0; while [ $i -lt 4000 ] && [ ! -e stop ]; do mv allowed parked && ln -s denied allowed && rm allowed && mv parked allowed; i=$((i+1)); done; echo $i',
        { timeoutMs: 120_000 },
      );
      const outcomes: string[] = [];
      for (let i = 0; i < 150; i++) {
        outcomes.push(
          await files()
            .write(handle, `/workspace/race/allowed/f${i}`, Buffer.from('x'), { createParents: false, symlinks: 'refuse' })
            .then(
              () => 'written',
              (error: { code: string }) => error.code,
            ),
        );
      }
      await files().write(handle, '/workspace/race/stop', Buffer.from(''), { createParents: false });
      const flips = Number((await swapper).stdout.trim());
      assert.equal(
        await shOk(context().driver, handle, 'ls -A /workspace/race/denied | wc -l'),
        '0',
        `a write landed in the denied directory (${outcomes.join(',')})`,
      );
      assert.ok(flips > 0, 'the swapper never ran');
      assert.ok(
        outcomes.every((code) => ['written', 'FILE_CHANGED', 'FILE_NOT_FOUND'].includes(code)),
        outcomes.join(','),
      );
    });

    it('is not redirected by planted symlinks named like temp files', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      await shOk(context().driver, handle, 'mkdir -p /workspace/plant && echo untouched > /workspace/victim');
      const hostDir = context().workspaceHostDir?.(spec);
      if (hostDir) {
        // Through the host's view of /workspace (3,000 `ln` processes would take minutes in a sandbox): the same directory.
        const plant = join(hostDir, 'plant');
        for (let pid = 1; pid <= PLANTED_FROM_HOST; pid++) await symlink('/workspace/victim', join(plant, `.airlock-write.${pid}`));
        await symlink('/workspace/victim', join(plant, '.airlock-'));
      } else {
        await shOk(
          context().driver,
          handle,
          `cd /workspace/plant && i=1; while [ $i -le ${PLANTED_FROM_INSIDE} ]; do ln -s /workspace/victim .airlock-write.$i; i=$((i+1)); done; ln -s /workspace/victim .airlock-`,
        );
      }
      await files().write(handle, '/workspace/plant/target', Buffer.from('written'), { createParents: false });
      assert.equal(await shOk(context().driver, handle, 'cat /workspace/victim; cat /workspace/plant/target'), 'untouched\nwritten');
      const names = hostDir ? await readdir(join(hostDir, 'plant')) : (await files().list(handle, '/workspace/plant')).map((entry) => entry.name);
      assert.deepEqual(names.filter((name) => !name.startsWith('.airlock-write.')).sort(), ['.airlock-', 'target'], 'a temp file was left behind');
    });

    it('answers a 300-byte name and a 2,040-component path with INVALID_ARGUMENTS, and keeps answering', async (t: TestContext) => {
      await assert.rejects(files().write(handle, `/workspace/${'n'.repeat(300)}`, Buffer.from('x'), { createParents: false }), { code: 'INVALID_ARGUMENTS' });
      await assert.rejects(files().read(handle, `/${'a/'.repeat(2040)}f`, { maxBytes: 1 }), { code: 'INVALID_ARGUMENTS' });
      await assert.rejects(files().write(handle, `/workspace/${'d/'.repeat(2040)}f`, Buffer.from('x'), { createParents: true }), { code: 'INVALID_ARGUMENTS' });
      if (skipWithoutCommands(context(), t)) return;
      assert.equal(await shOk(context().driver, handle, 'echo fine'), 'fine');
    });

    it('runs many short commands at once beside file calls: output, exit code and stdin intact, nothing left behind', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const { driver, hostSecret } = context();
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, index) => sh(driver, handle, `echo out-${index}; echo err-${index} >&2; exit ${index % 3}`, { timeoutMs: 60_000 })),
      );
      for (const [index, result] of results.entries()) {
        assert.equal(result.stdout, `out-${index}\n`);
        assert.equal(result.stderr, `err-${index}\n`);
        assert.equal(result.exitCode, index % 3);
      }
      const counted = await run(driver, handle, ['wc', '-c'], { stdin: Buffer.alloc(70_000, 0x61), timeoutMs: 60_000 });
      assert.equal(counted.stdout.trim(), '70000');
      // The pattern does not match its own command line (`out-[0-9]` is not followed by a digit there).
      assert.equal(await shOk(driver, handle, 'ps -o args | grep -c "echo out-[0-9]" || true'), '0', 'a command left a process');
      assert.notEqual((await run(driver, handle, ['cat', hostSecret.path])).exitCode, 0, 'a command saw a host file');
    });
  });
}
