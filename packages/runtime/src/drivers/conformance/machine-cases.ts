/**
 * Conformance cases about the machine's command slot (its agent): process
 * list and signals, detached services, terminals, health, and what a hostile
 * process inside may try against it: reach its channel, gain its
 * privileges, signal or stop pid 1, replace /dev/null, use up every process.
 * The slot survives what it can; what it cannot survive, the driver sees.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import type { SandboxHandle } from '../../core/sandbox-driver.js';
import { eventually, run, sh, shOk, skipWithoutCommands, withSandbox, type ConformanceContext } from './conformance-context.js';

/** Registers the machine cases. */
export function machineCases(getContext: () => ConformanceContext): void {
  describe('the machine and its command slot', () => {
    let handle: SandboxHandle;
    const context = (): ConformanceContext => getContext();

    before(async () => {
      handle = await context().driver.start(await context().newSpec());
    });
    after(async () => {
      if (handle) await context().driver.destroy(handle);
    });

    it('answers health, lists processes and signals one; pid 1 cannot be signalled through it', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const { driver } = context();
      const health = await driver.health(handle);
      assert.equal(health.answering, true, JSON.stringify(health));
      const pid = Number(await shOk(driver, handle, 'sleep 401 >/dev/null 2>&1 & echo $!'));
      // The background child may still be the shell's fork for a moment before it execs sleep.
      await eventually(
        async () => (await driver.processes(handle)).map((entry) => `${entry.pid} ${entry.argv.join(' ')}`),
        (listed) => listed.includes(`${pid} sleep 401`),
        10_000,
        'the process list',
      );
      await driver.signal(handle, pid, 'TERM');
      await eventually(
        async () => (await driver.processes(handle)).some((entry) => entry.pid === pid && entry.state !== 'Z'),
        (present) => !present,
        5_000,
        'the signalled process',
      );
      await assert.rejects(driver.signal(handle, 1, 'KILL'), { code: 'INVALID_ARGUMENTS' });
      await assert.rejects(driver.signal(handle, 99_999, 'TERM'), { code: 'NOT_FOUND' });
    });

    it('detaches a service with its output in a log, and fails one that cannot start', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const { driver } = context();
      const started = await driver.exec(handle, {
        argv: ['sh', '-c', 'echo serving; exec sleep 402'],
        cwd: '/',
        env: {},
        timeoutMs: 30_000,
        detach: { logPath: '/tmp/airlock-test/service.log' },
      });
      assert.equal(started.exitCode, 0);
      assert.ok(started.pid && started.pid > 1, `no pid: ${JSON.stringify(started)}`);
      await eventually(
        () => shOk(driver, handle, 'cat /tmp/airlock-test/service.log 2>/dev/null || true'),
        (text) => text === 'serving',
        5_000,
        'the log',
      );
      assert.equal(await shOk(driver, handle, `kill -0 ${started.pid} && echo alive`), 'alive');
      await driver.signal(handle, started.pid, 'KILL');
      let stderr = '';
      const failed = await driver.exec(handle, {
        argv: ['no-such-service'],
        cwd: '/',
        env: {},
        timeoutMs: 30_000,
        detach: {},
        onStderr: (chunk) => (stderr += chunk.toString()),
      });
      assert.equal(failed.exitCode, 127);
      assert.match(stderr, /no-such-service: command not found/);
    });

    it('runs a command on a terminal, with input and resize', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const { driver } = context();
      if (!driver.capabilities.terminal) return t.skip('driver declares no terminal capability');
      const terminal = await driver.openTerminal(handle, {
        argv: ['sh', '-c', 'tty; read x; stty size; echo got:$x'],
        cwd: '/',
        env: {},
        rows: 24,
        columns: 80,
      });
      let output = '';
      terminal.stream.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await eventually(
        async () => output,
        (text) => /\/dev\/pts\/\d+/.test(text),
        10_000,
        'tty',
      );
      terminal.resize(30, 90);
      terminal.stream.write('typed\n');
      assert.equal((await terminal.exited).exitCode, 0);
      await eventually(
        async () => output,
        (text) => text.includes('got:typed') && /30 90/.test(text),
        5_000,
        'terminal output',
      );
    });

    it('keeps its channel and its privileges from the session’s processes', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const { driver } = context();
      for (const path of context().agentChannelPaths ?? []) {
        const probe = await sh(driver, handle, `ls ${path} 2>&1; cat ${path} 2>&1; echo x > ${path} 2>&1; echo done`);
        assert.match(probe.stdout, /Permission denied|No such file/, `${path} is reachable: ${probe.stdout}`);
      }
      // No process of the session holds CAP_SYS_ADMIN (21), CAP_DAC_OVERRIDE (1) or CAP_SETPCAP (8), even in its bounding set.
      const caps = await shOk(driver, handle, 'grep -E "^Cap(Eff|Prm|Bnd|Inh|Amb)" /proc/self/status');
      for (const line of caps.split('\n')) {
        const mask = BigInt(`0x${line.split(/\s+/)[1] ?? '0'}`);
        for (const bit of [1n, 8n, 21n]) assert.equal((mask >> bit) & 1n, 0n, `${line} holds capability ${bit}`);
      }
      const denied = await sh(driver, handle, 'hostname evil; mount -t tmpfs none /mnt; cat /proc/1/mem; echo end');
      assert.match(denied.stdout + denied.stderr, /end/);
      assert.doesNotMatch(await shOk(driver, handle, 'hostname'), /^evil$/);
    });

    it('survives the signals a process can send pid 1, and a stop is repaired', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const { driver } = context();
      await sh(driver, handle, 'for s in TERM HUP INT QUIT USR1 USR2 PIPE ALRM CHLD TSTP TTIN TTOU WINCH; do kill -$s 1; done; echo sent');
      assert.equal(await shOk(driver, handle, 'echo after-signals'), 'after-signals');
      // SIGSTOP cannot be caught: the command that sends it is never reported, the driver must notice and repair.
      await sh(driver, handle, 'kill -STOP 1; echo stopped', { timeoutMs: 3_000 }).catch(() => undefined);
      const health = await driver.health(handle);
      assert.equal(health.answering, true, `after kill -STOP 1: ${JSON.stringify(health)}`);
      assert.equal(await shOk(driver, handle, 'echo after-stop'), 'after-stop');
    });

    it('keeps working after /dev/null is replaced and when the session has used up its processes', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const { driver } = context();
      await shOk(driver, handle, 'rm -f /dev/null && echo not-null > /dev/null && echo replaced');
      assert.equal((await run(driver, handle, ['cat'])).stdout, '', 'stdin is still empty');
      const detached = await driver.exec(handle, { argv: ['sleep', '403'], cwd: '/', env: {}, timeoutMs: 10_000, detach: {} });
      assert.equal(detached.exitCode, 0);
      await withSandbox(context(), { resources: { maxProcesses: 16 } }, async (small) => {
        // Fill the quota with sleepers; the slot still starts a command.
        await sh(driver, small, 'i=0; while [ $i -lt 40 ]; do sleep 404 & i=$((i+1)); done 2>/dev/null; echo filled', { timeoutMs: 30_000 });
        assert.equal(await shOk(driver, small, 'echo still-starts'), 'still-starts');
      });
    });
  });
}
