/**
 * Conformance cases about running commands: output, exit codes, stdin, cwd
 * and env, timeouts, aborts, background processes and /workspace. They share
 * one long-lived sandbox to keep the suite fast.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import type { SandboxHandle, SandboxSpec } from '../../core/sandbox-driver.js';
import { counterScript, eventually, pidIn, run, sh, shOk, skipWithoutCommands, sleep, type ConformanceContext } from './conformance-context.js';

/** Registers the command cases; `getContext` is valid once the suite's `before` ran. */
export function commandCases(getContext: () => ConformanceContext): void {
  describe('commands', () => {
    let handle: SandboxHandle;
    let spec: SandboxSpec;
    const context = (): ConformanceContext => getContext();

    before(async () => {
      spec = await context().newSpec({ env: { SPEC_VAR: 'from-spec' } });
      handle = await context().driver.start(spec);
    });
    after(async () => {
      if (handle) await context().driver.destroy(handle);
    });

    it('runs a command and keeps stdout and stderr apart', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const result = await sh(context().driver, handle, 'echo out; echo err >&2');
      assert.equal(result.exitCode, 0);
      assert.equal(result.stdout, 'out\n');
      assert.equal(result.stderr, 'err\n');
      assert.equal(result.timedOut, false);
      assert.equal(result.aborted, false);
    });

    it('propagates exit codes, including death by signal', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      assert.equal((await sh(context().driver, handle, 'exit 42')).exitCode, 42);
      assert.equal((await run(context().driver, handle, ['false'])).exitCode, 1);
      assert.equal((await sh(context().driver, handle, 'kill -9 $$')).exitCode, 137);
      assert.equal((await run(context().driver, handle, ['/no/such/binary'])).exitCode, 127);
    });

    it('feeds stdin, small and larger than a pipe buffer', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const small = await run(context().driver, handle, ['cat'], { stdin: Buffer.from('hello\nworld') });
      assert.equal(small.stdout, 'hello\nworld');
      const large = await run(context().driver, handle, ['wc', '-c'], { stdin: Buffer.alloc(300_000, 0x61) });
      assert.equal(large.stdout.trim(), '300000');
      const none = await run(context().driver, handle, ['cat']);
      assert.equal(none.exitCode, 0, 'without stdin the command sees EOF at once');
      assert.equal(none.stdout, '');
    });

    it("runs the program $PATH names, never the driver's own tools, and fails a missing one with 127", async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      // A program called like one of the toolbox's, earlier in PATH: the call must reach it.
      await shOk(
        context().driver,
        handle,
        'mkdir -p /workspace/pathbin && printf \'#!/bin/sh\\necho image-grep "$@"\\n\' > /workspace/pathbin/grep && chmod +x /workspace/pathbin/grep',
      );
      const path = `/workspace/pathbin:${spec.env['PATH'] ?? '/usr/bin:/bin'}`;
      const found = await run(context().driver, handle, ['grep', '-x', 'y'], { env: { PATH: path } });
      assert.equal(found.stdout, 'image-grep -x y\n', found.stderr);
      const missing = await run(context().driver, handle, ['no-such-program-anywhere']);
      assert.equal(missing.exitCode, 127);
      assert.match(missing.stderr, /no-such-program-anywhere: command not found/);
    });

    it('applies cwd and env (quoted as data) on top of the spec env', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const tricky = `it's $HOME "and" \`this\``;
      const result = await sh(context().driver, handle, 'pwd; echo "$GREETING"; echo "$SPEC_VAR"', { cwd: '/tmp', env: { GREETING: tricky } });
      assert.equal(result.exitCode, 0, result.stderr);
      assert.equal(result.stdout, `/tmp\n${tricky}\nfrom-spec\n`);
      const missing = await sh(context().driver, handle, 'pwd', { cwd: '/no/such/dir' });
      assert.notEqual(missing.exitCode, 0, 'a missing cwd fails the command');
    });

    it('kills a command and its process group on timeout', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const started = Date.now();
      const result = await sh(context().driver, handle, 'sleep 301 & exec sleep 302', { timeoutMs: 1_500 });
      assert.equal(result.timedOut, true);
      assert.equal(result.aborted, false);
      assert.equal(result.exitCode, 137);
      assert.ok(Date.now() - started < 15_000, `timeout took ${Date.now() - started} ms`);
      await eventually(
        () => shOk(context().driver, handle, 'ps -o args | grep -c "sleep 30[12]" || true'),
        (n) => n === '0',
        5_000,
        'sleeps left after timeout',
      );
    });

    it('kills a command when the caller aborts', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 1_000);
      const result = await sh(context().driver, handle, 'sleep 303 & exec sleep 304', { signal: controller.signal, timeoutMs: 60_000 });
      assert.equal(result.aborted, true);
      assert.equal(result.timedOut, false);
      assert.equal(result.exitCode, 137);
      await eventually(
        () => shOk(context().driver, handle, 'ps -o args | grep -c "sleep 30[34]" || true'),
        (n) => n === '0',
        5_000,
        'sleeps left after abort',
      );
      const early = new AbortController();
      early.abort();
      const preAborted = await sh(context().driver, handle, 'sleep 305', { signal: early.signal });
      assert.equal(preAborted.aborted, true);
    });

    it('returns while background processes keep running', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const started = Date.now();
      const pid = await shOk(context().driver, handle, counterScript('/workspace/bg-counter'));
      // A background process that keeps the command's own stdout open must not hold the call either.
      const printer = await sh(context().driver, handle, 'while :; do echo tick; sleep 0.3; done & echo "pid=$!"');
      assert.equal(printer.exitCode, 0);
      assert.ok(Date.now() - started < 20_000, `exec waited for background processes (${Date.now() - started} ms)`);
      const counter = (): Promise<string> => shOk(context().driver, handle, 'cat /workspace/bg-counter 2>/dev/null || echo 0');
      const first = Number(await eventually(counter, (v) => Number(v) > 0, 10_000, 'counter'));
      await sleep(1_500);
      const second = Number(await counter());
      assert.ok(second > first, `counter did not advance: ${first} -> ${second}`);
      const printerPid = pidIn(printer.stdout);
      assert.equal(await shOk(context().driver, handle, `kill -0 ${pid} && kill -0 ${printerPid} && echo alive`), 'alive');
      await shOk(context().driver, handle, `kill ${pid} ${printerPid}`);
    });

    it('shares /workspace with the host in both directions', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const hostDir = context().workspaceHostDir?.(spec);
      if (!context().driver.capabilities.sharedDisk || hostDir === undefined)
        return t.skip('the session disk is a block device inside the machine: the host cannot see it while the machine runs');
      await shOk(context().driver, handle, 'echo from-sandbox > /workspace/inside.txt');
      assert.equal(await readFile(join(hostDir, 'inside.txt'), 'utf8'), 'from-sandbox\n');
      await writeFile(join(hostDir, 'outside.txt'), 'from-host');
      assert.equal(await shOk(context().driver, handle, 'cat /workspace/outside.txt'), 'from-host');
    });

    it('never writes into the image rootfs', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const before = await context().imageFingerprint();
      await shOk(context().driver, handle, 'echo x > /etc/airlock-probe && mkdir -p /usr/airlock-dir && rm -f /etc/hostname && touch /bin/busybox');
      assert.equal(await shOk(context().driver, handle, 'cat /etc/airlock-probe; [ -e /etc/hostname ] || echo gone'), 'x\ngone');
      assert.equal(await context().imageFingerprint(), before, 'the image rootfs changed');
    });

    it('reports positive usage numbers', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      await shOk(context().driver, handle, 'i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done');
      const usage = await context().driver.usage(handle);
      assert.ok(usage.cpuSeconds > 0, `cpuSeconds ${usage.cpuSeconds}`);
      assert.ok(usage.memoryBytes > 0, `memoryBytes ${usage.memoryBytes}`);
      assert.ok(usage.peakMemoryBytes >= usage.memoryBytes, 'peak below current');
    });

    it('hides host files and host processes', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const secret = await sh(context().driver, handle, `cat ${context().hostSecret.path}`);
      assert.notEqual(secret.exitCode, 0);
      assert.ok(!secret.stdout.includes(context().hostSecret.content), 'host file visible in the sandbox');
      const pids = (await shOk(context().driver, handle, 'ls /proc')).split(/\s+/).filter((entry) => /^\d+$/.test(entry));
      assert.ok(pids.length > 0 && pids.length < 60, `sandbox /proc shows ${pids.length} processes`);
      const processes = await shOk(context().driver, handle, 'cat /proc/[0-9]*/cmdline | tr "\\0" " "');
      for (const hostOnly of ['node', 'runsc', 'systemd', 'process_api']) {
        assert.ok(!new RegExp(`(^|[ /])${hostOnly}( |$)`).test(processes), `host process ${hostOnly} visible: ${processes}`);
      }
    });
  });
}
