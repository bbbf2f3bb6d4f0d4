/**
 * Conformance cases about `driver.files`: every operation, and the hostile
 * paths a session's own processes can set up: symlinks out of the sandbox,
 * "..", a symlink swapped in while calls run, planted temp-file names, long
 * names and 2,040 components. Each must end inside the sandbox or in a
 * clear error, never on the host and never in a crash.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SandboxHandle, SandboxSpec } from '../../core/sandbox-driver.js';
import { sh, shOk, type ConformanceContext } from './conformance-context.js';

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

    it('writes, reads, stats, lists, creates, renames and removes, seen the same by commands and the host', async () => {
      await files().write(handle, '/workspace/f/a.txt', Buffer.from('from the API'), { createParents: true });
      assert.equal(await shOk(context().driver, handle, 'cat /workspace/f/a.txt'), 'from the API');
      assert.equal(await readFile(join(context().workspaceHostDir(spec), 'f/a.txt'), 'utf8'), 'from the API');
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
      assert.deepEqual(listed.map((entry) => [entry.name, entry.path, entry.type]), [['b.txt', '/workspace/f/x/y/b.txt', 'file']]);
      assert.equal(await files().canonical(handle, '/etc/digits-link', { followLast: true }), '/etc/digits');
      assert.equal(await files().canonical(handle, '/workspace/f/../f/missing/z', { followLast: true }), '/workspace/f/missing/z');
      await files().remove(handle, '/workspace/f', { recursive: true });
      assert.equal((await sh(context().driver, handle, 'test -e /workspace/f')).exitCode, 1);
      await assert.rejects(files().read(handle, '/workspace/f', { maxBytes: 1 }), { code: 'FILE_NOT_FOUND' });
      await assert.rejects(files().read(handle, '/etc', { maxBytes: 1 }), { code: 'IS_A_DIRECTORY' });
      await assert.rejects(files().remove(handle, '/etc', { recursive: false }), { code: 'IS_A_DIRECTORY' });
      await assert.rejects(files().list(handle, '/etc/digits'), { code: 'NOT_A_DIRECTORY' });
    });

    it('keeps symlinks and ".." inside the sandbox: the host file they name is never reached', async () => {
      const secret = context().hostSecret;
      await shOk(context().driver, handle, `mkdir -p /workspace/esc && ln -sf ${secret.path} /workspace/esc/abs && ln -sf ../../../../../../../..${secret.path} /workspace/esc/rel && ln -sfn / /workspace/esc/root`);
      for (const path of ['/workspace/esc/abs', '/workspace/esc/rel', `/workspace/esc/root${secret.path}`, `/../../../../..${secret.path}`]) {
        await assert.rejects(files().read(handle, path, { maxBytes: 4096 }), { code: 'FILE_NOT_FOUND' }, path);
      }
      await files().write(handle, '/workspace/esc/abs', Buffer.from('replaced'), { createParents: false });
      assert.equal(await readFile(secret.path, 'utf8'), secret.content, 'a write through a link touched the host');
      assert.equal((await files().stat(handle, '/workspace/esc/abs')).type, 'file', 'the link itself was replaced');
      await shOk(context().driver, handle, 'ln -sf loop-b /workspace/esc/loop-a && ln -sf loop-a /workspace/esc/loop-b');
      await assert.rejects(files().read(handle, '/workspace/esc/loop-a', { maxBytes: 1 }), { code: 'INVALID_ARGUMENTS' });
    });

    it('with symlinks refused, a directory swapped for a symlink while calls run never redirects a write', async () => {
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
            .then(() => 'written', (error: { code: string }) => error.code),
        );
      }
      await writeFile(join(context().workspaceHostDir(spec), 'race/stop'), '');
      const flips = Number((await swapper).stdout.trim());
      assert.equal(await shOk(context().driver, handle, 'ls -A /workspace/race/denied | wc -l'), '0', `a write landed in the denied directory (${outcomes.join(',')})`);
      assert.ok(flips > 0, 'the swapper never ran');
      assert.ok(outcomes.every((code) => ['written', 'FILE_CHANGED', 'FILE_NOT_FOUND'].includes(code)), outcomes.join(','));
    });

    it('is not redirected by 3,000 planted symlinks named like temp files', async () => {
      // Planted through the host's view of /workspace (3,000 `ln` processes would take minutes in a sandbox): the same directory.
      await shOk(context().driver, handle, 'mkdir -p /workspace/plant && echo untouched > /workspace/victim');
      const plant = join(context().workspaceHostDir(spec), 'plant');
      for (let pid = 1; pid <= 3000; pid++) await symlink('/workspace/victim', join(plant, `.airlock-write.${pid}`));
      await symlink('/workspace/victim', join(plant, '.airlock-'));
      await files().write(handle, '/workspace/plant/target', Buffer.from('written'), { createParents: false });
      assert.equal(await shOk(context().driver, handle, 'cat /workspace/victim; cat /workspace/plant/target'), 'untouched\nwritten');
      assert.deepEqual((await readdir(plant)).filter((name) => !name.startsWith('.airlock-write.')).sort(), ['.airlock-', 'target'], 'a temp file was left behind');
    });

    it('answers a 300-byte name and a 2,040-component path with INVALID_ARGUMENTS, and keeps answering', async () => {
      await assert.rejects(files().write(handle, `/workspace/${'n'.repeat(300)}`, Buffer.from('x'), { createParents: false }), { code: 'INVALID_ARGUMENTS' });
      await assert.rejects(files().read(handle, `/${'a/'.repeat(2040)}f`, { maxBytes: 1 }), { code: 'INVALID_ARGUMENTS' });
      await assert.rejects(files().write(handle, `/workspace/${'d/'.repeat(2040)}f`, Buffer.from('x'), { createParents: true }), { code: 'INVALID_ARGUMENTS' });
      assert.equal(await shOk(context().driver, handle, 'echo fine'), 'fine');
    });
  });
}
