/**
 * Conformance cases for what core does through a driver's toolbox: the file
 * operations of the files API (core/file-operations.ts, run as `transient`
 * commands of the toolbox busybox, exactly as the tool executor runs them),
 * path resolution by the sandbox's own kernel, and the transient exec path
 * itself (fast, leaves nothing behind, many at once). One sandbox serves all.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it, type TestContext } from 'node:test';
import { isAirlockError } from '../../core/errors.js';
import { FileOperations, type SandboxRunner } from '../../core/file-operations.js';
import type { SandboxHandle } from '../../core/sandbox-driver.js';
import { shOk, skipWithoutCommands, type ConformanceContext } from './conformance-context.js';

/** Registers the file and transient-exec cases. */
export function fileCases(getContext: () => ConformanceContext): void {
  describe('files through the toolbox, and transient commands', () => {
    let handle: SandboxHandle | undefined;
    const context = (): ConformanceContext => getContext();
    const files = (): FileOperations => new FileOperations(context().driver.toolboxPath);
    // As the tool executor runs file work: transient, cwd /, no environment of its own.
    const run: SandboxRunner = async (request) => {
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      const outcome = await context().driver.exec(handle as SandboxHandle, {
        argv: request.argv,
        cwd: '/',
        env: {},
        timeoutMs: request.timeoutMs,
        transient: true,
        ...(request.stdin === undefined ? {} : { stdin: request.stdin }),
        onStdout: (chunk) => stdout.push(chunk),
        onStderr: (chunk) => stderr.push(chunk),
      });
      return { ...outcome, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) };
    };

    before(async () => {
      if (context().runsNoCommands !== undefined) return;
      handle = await context().driver.start(await context().newSpec());
    });
    after(async () => {
      if (handle) await context().driver.destroy(handle);
    });

    it('writes, reads, lists, stats and removes files, binary content intact', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const content = Buffer.concat([Buffer.from([...Array(256).keys()]), randomBytes(200_000)]);
      await files().write(run, '/workspace/deep/dir/blob.bin', content, { createParents: true });
      const read = await files().read(run, '/workspace/deep/dir/blob.bin', 1024 * 1024);
      assert.equal(read.size, content.length);
      assert.equal(read.truncated, false);
      assert.ok(read.content.equals(content), 'the file came back changed');
      const partial = await files().read(run, '/workspace/deep/dir/blob.bin', 10);
      assert.equal(partial.truncated, true);
      assert.equal(partial.content.length, 10);
      await files().mkdir(run, '/workspace/deep/empty');
      const listing = await files().list(run, '/workspace/deep');
      assert.deepEqual(listing.map((entry) => [entry.name, entry.type]), [['dir', 'directory'], ['empty', 'directory']]);
      const info = await files().stat(run, '/workspace/deep/dir/blob.bin');
      assert.equal(info.type, 'file');
      assert.equal(info.size, content.length);
      await assert.rejects(files().read(run, '/workspace/deep/missing', 10), (error: unknown) => isAirlockError(error, 'FILE_NOT_FOUND'));
      await assert.rejects(files().read(run, '/workspace/deep', 10), (error: unknown) => isAirlockError(error, 'IS_A_DIRECTORY'));
      await assert.rejects(files().remove(run, '/workspace/deep', false), (error: unknown) => isAirlockError(error, 'IS_A_DIRECTORY'));
      await files().remove(run, '/workspace/deep', true);
      await assert.rejects(files().stat(run, '/workspace/deep'), (error: unknown) => isAirlockError(error, 'FILE_NOT_FOUND'));
    });

    it('resolves paths with the sandbox kernel: symlinks and .. never leave the sandbox', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      await shOk(context().driver, handle as SandboxHandle, 'mkdir -p /workspace/links && ln -sfn /etc /workspace/links/etc && ln -sfn ../../../.. /workspace/links/up');
      assert.equal(await files().canonical(run, '/workspace/links/etc/passwd', true), '/etc/passwd');
      assert.equal(await files().canonical(run, '/workspace/links/up/etc/passwd', true), '/etc/passwd');
      assert.equal(await files().canonical(run, '/workspace/links/etc', false), '/workspace/links/etc');
      const passwd = await files().read(run, '/workspace/links/up/etc/passwd', 4096);
      assert.match(passwd.content.toString(), /^root:/m, 'the sandbox read its own /etc/passwd');
      assert.ok(!passwd.content.toString().includes(context().hostSecret.content));
    });

    it('runs transient commands: output and exit code, many at once, nothing left behind', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const { driver, hostSecret } = context();
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, index) =>
          run({ argv: [driver.toolboxPath, 'sh', '-c', `echo out-${index}; echo err-${index} >&2; exit ${index % 3}`], timeoutMs: 60_000 }),
        ),
      );
      for (const [index, result] of results.entries()) {
        assert.equal(result.stdout.toString(), `out-${index}\n`);
        assert.equal(result.stderr.toString(), `err-${index}\n`);
        assert.equal(result.exitCode, index % 3);
      }
      const stdin = await run({ argv: [driver.toolboxPath, 'wc', '-c'], stdin: Buffer.alloc(70_000, 0x61), timeoutMs: 60_000 });
      assert.equal(stdin.stdout.toString().trim(), '70000');
      // The pattern does not match its own command line (`out-[0-9]` is not followed by a digit there).
      const left = await shOk(driver, handle as SandboxHandle, 'ps -o args | grep -c "echo out-[0-9]" || true');
      assert.equal(left, '0', 'a transient command left a process');
      const secret = await run({ argv: [driver.toolboxPath, 'cat', hostSecret.path], timeoutMs: 30_000 });
      assert.notEqual(secret.exitCode, 0, 'a transient command saw a host file');
    });
  });
}
