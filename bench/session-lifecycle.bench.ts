/**
 * Issue 2's and 11's figures: create → first output, exec round trip, file
 * write and read (64 KiB, and 4 KiB both ways), waking a paused session,
 * suspend and resume (small and ~256 MB), each through the SDK against a real
 * server, beside the same operation on `runsc` directly in the same run (the
 * floor's write and read are `runsc exec`s of `cat`; its wake is `runsc
 * resume` + `runsc exec true`). Usage: npx tsx bench/session-lifecycle.bench.ts [iterations]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, openDataDir, openImageCatalog } from '@airlock/runtime';
import { Sandbox } from '@airlock/sdk';
import { holdMemoryScript, startHolderCommand } from './memory-holder.js';
import { RawRunsc } from './runsc-floor.js';
import { printComparisons, timed, type Comparison } from './stats.js';

const iterations = Number.parseInt(process.argv[2] ?? '5', 10);
const work = mkdtempSync('/var/tmp/airlock-bench-');
// 256 MB of random bytes, filled in 1 MB chunks so that the peak stays at 256 MB
const HOLD_256MB = holdMemoryScript(256);
const CONTRACT = { version: 1, resources: { memoryMb: 1024 } };

const server = await startServer({ dataDir: join(work, 'data'), host: '127.0.0.1', port: 0, token: 'bench' });
const connection = { url: server.url, token: 'bench' };
const image = await openImageCatalog(openDataDir(join(work, 'data'))).get('debian-bookworm');
const rows: Comparison[] = [];
const row = (operation: string): Comparison => {
  const entry = { operation, airlock: [] as number[], floor: [] as number[] };
  rows.push(entry);
  return entry;
};

try {
  const create = row('create → first command output');
  const execTrip = row('exec `true` round trip');
  const write = row('file write 64 KiB');
  const read = row('file read 64 KiB');
  const smallFiles = row('file write + read 4 KiB');
  const wake = row('wake a paused session → first output');
  const suspendSmall = row('suspend (idle session)');
  const resumeSmall = row('resume (idle session) → first output');
  const suspendBig = row('suspend (256 MB held)');
  const resumeBig = row('resume (256 MB held) → first output');
  const payload = 'x'.repeat(64 * 1024);
  const smallPayload = 'x'.repeat(4 * 1024);

  for (let i = 0; i < iterations; i += 1) {
    // Airlock, through the SDK and HTTP
    let sandbox: Sandbox | undefined;
    create.airlock.push(await timed(async () => {
      sandbox = await Sandbox.create({ ...connection, contract: CONTRACT });
      await sandbox.commands.run('echo ready');
    }));
    const s = sandbox as Sandbox;
    for (let k = 0; k < 5; k += 1) execTrip.airlock.push(await timed(() => s.commands.run(['true'])));
    write.airlock.push(await timed(() => s.files.write('/workspace/payload', payload)));
    read.airlock.push(await timed(() => s.files.read('/workspace/payload')));
    for (let k = 0; k < 5; k += 1) {
      smallFiles.airlock.push(await timed(async () => {
        await s.files.write('/workspace/small', smallPayload);
        await s.files.read('/workspace/small');
      }));
    }
    for (let k = 0; k < 3; k += 1) {
      await s.pause();
      wake.airlock.push(await timed(() => s.commands.run(['true'])));
    }
    suspendSmall.airlock.push(await timed(() => s.suspend()));
    resumeSmall.airlock.push(await timed(async () => {
      await s.resume();
      await s.commands.run(['true']);
    }));
    await s.files.write('/workspace/hold.py', HOLD_256MB);
    await s.commands.run(startHolderCommand('/workspace/hold.py'));
    suspendBig.airlock.push(await timed(() => s.suspend()));
    resumeBig.airlock.push(await timed(async () => {
      await s.resume();
      await s.commands.run(['true']);
    }));
    await s.kill();

    // the floor: runsc by hand
    const raw = new RawRunsc(work, image.rootfsDir, `i${i}`);
    create.floor.push(await timed(() => {
      raw.start();
      raw.exec(['echo', 'ready']);
    }));
    for (let k = 0; k < 5; k += 1) execTrip.floor.push(await timed(() => raw.exec(['true'])));
    write.floor.push(await timed(() => raw.exec(['sh', '-c', 'cat > /tmp/payload'], payload)));
    read.floor.push(await timed(() => raw.exec(['cat', '/tmp/payload'])));
    for (let k = 0; k < 5; k += 1) {
      smallFiles.floor.push(await timed(() => {
        raw.exec(['sh', '-c', 'cat > /tmp/small'], smallPayload);
        raw.exec(['cat', '/tmp/small']);
      }));
    }
    for (let k = 0; k < 3; k += 1) {
      raw.pause();
      wake.floor.push(await timed(() => {
        raw.unpause();
        raw.exec(['true']);
      }));
    }
    const small = join(work, `ckpt-small-${i}`);
    suspendSmall.floor.push(await timed(() => raw.checkpoint(small)));
    resumeSmall.floor.push(await timed(() => {
      raw.restore(small);
      raw.exec(['true']);
    }));
    raw.destroy();
    // runsc restore kills what `runsc exec` started, so the holder is the floor sandbox's first process
    const holder = new RawRunsc(work, image.rootfsDir, `h${i}`, ['/usr/bin/python3', '-c', HOLD_256MB]);
    holder.start();
    holder.exec(['sh', '-c', 'while [ ! -f /tmp/held ]; do sleep 0.1; done']);
    const big = join(work, `ckpt-big-${i}`);
    suspendBig.floor.push(await timed(() => holder.checkpoint(big)));
    resumeBig.floor.push(await timed(() => {
      holder.restore(big);
      holder.exec(['true']);
    }));
    holder.destroy();
    rmSync(small, { recursive: true, force: true });
    rmSync(big, { recursive: true, force: true });
  }
  printComparisons(`Session lifecycle, ${iterations} iterations (exec and 4 KiB files: ${iterations * 5} calls, wake: ${iterations * 3})`, rows);
} catch (error) {
  process.stderr.write(`benchmark failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
} finally {
  for (const session of await server.services.sessions.list()) {
    if (session.state !== 'terminated') await server.services.sessions.terminate(session.id).catch(() => undefined);
  }
  await server.close();
  rmSync(work, { recursive: true, force: true });
}
