/**
 * Conformance cases for reaching a service inside a sandbox (`connect`) and
 * for the start/run split of a command's time that per-call timing reports.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { Duplex } from 'node:stream';
import { assertGoneSoon, sh, shOk, withSandbox, skipWithoutCommands, type ConformanceContext } from './conformance-context.js';

/**
 * A one-connection echo service on 127.0.0.1:`port` (busybox nc of the test image), started in the
 * background; returns once it listens.
 */
const SERVER = (port: number) =>
  `nc -l -p ${port} -e sh -c 'read -r x; printf "echo:%s" "$x"' </dev/null >/dev/null 2>&1 & ` +
  `i=0; while ! netstat -ltn 2>/dev/null | grep -q ':${port} ' && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done`;

/** Registers the port and timing cases. */
export function portCases(getContext: () => ConformanceContext): void {
  describe('ports and timing', () => {
    it('connect reaches a port on the sandbox loopback both ways; a closed port fails with PORT_UNREACHABLE', async (t: TestContext) => {
      if (skipWithoutCommands(getContext(), t)) return;
      const { driver } = getContext();
      await withSandbox(getContext(), {}, async (handle) => {
        await shOk(driver, handle, SERVER(8123));
        const socket = await driver.connect(handle, 8123);
        socket.end('ping');
        assert.equal(await readAll(socket), 'echo:ping');
        // Refused at connect or on the first read: either way PORT_UNREACHABLE.
        const refused = async (): Promise<string> => {
          const stream = await driver.connect(handle, 8124);
          stream.end();
          return readAll(stream);
        };
        await assert.rejects(refused(), { code: 'PORT_UNREACHABLE' });
        // No connection left running in the sandbox: a checkpoint or the next command is unaffected.
        assert.equal((await sh(driver, handle, 'true')).exitCode, 0);
      });
    });

    it('reports how much of a command’s time went into starting it, apart from its own output', async (t: TestContext) => {
      if (skipWithoutCommands(getContext(), t)) return;
      const { driver } = getContext();
      await withSandbox(getContext(), {}, async (handle) => {
        const out: Buffer[] = [];
        const outcome = await driver.exec(handle, { argv: ['echo', 'exact'], cwd: '/', env: {}, timeoutMs: 30_000, onStdout: (chunk) => out.push(chunk) });
        assert.equal(Buffer.concat(out).toString(), 'exact\n', 'the start marker never reaches the output');
        if (outcome.startMs !== undefined) assert.ok(outcome.startMs >= 0 && outcome.startMs <= outcome.durationMs);
      });
      const spec = await getContext().newSpec({ oneShot: { argv: ['printf', 'once'] } });
      const out: Buffer[] = [];
      const once = await driver.runOnce(spec, { cwd: '/', env: {}, timeoutMs: 30_000, onStdout: (chunk) => out.push(chunk) });
      assert.equal(Buffer.concat(out).toString(), 'once');
      if (once.startMs !== undefined) assert.ok(once.startMs > 0 && once.startMs <= once.durationMs, `startMs ${once.startMs} within ${once.durationMs}`);
      await assertGoneSoon(getContext(), spec.sandboxId, 'runOnce left its sandbox behind');
    });
  });
}

async function readAll(socket: Duplex): Promise<string> {
  let text = '';
  for await (const chunk of socket) text += String(chunk);
  return text;
}
