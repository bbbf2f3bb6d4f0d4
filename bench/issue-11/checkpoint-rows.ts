/**
 * Rows 5–6 of issue 11's Targets: resume a hibernated small session → first
 * output beside `runsc restore` of the same rootfs, and suspend of a session
 * holding 256 MB (ms per GB held) beside `runsc checkpoint` of a sandbox
 * holding the same, interleaved sample by sample. The floors are taken as in
 * bench/session-lifecycle.bench.ts (RawRunsc, `--compression=none`).
 */
import { join } from 'node:path';
import { Sandbox } from '@airlock/sdk';
import { holdMemoryScript, startHolderCommand } from '../memory-holder.js';
import { RawRunsc } from '../runsc-floor.js';
import { quantile, timed } from '../stats.js';
import { handleOf, type BenchContext } from './bench-context.js';
import { figure, measureRow, type RowResult } from './row-result.js';

const HELD_MB = 256;
const HELD_GB = HELD_MB / 1024;

/** Runs the rows of this file that `wanted` accepts. */
export async function checkpointRows(context: BenchContext, wanted: (id: string) => boolean): Promise<RowResult[]> {
  const rows: RowResult[] = [];
  if (wanted('resume')) rows.push(await resumeRow(context));
  if (wanted('suspend')) rows.push(await suspendRow(context));
  return rows;
}

function resumeRow(context: BenchContext): Promise<RowResult> {
  const target = '≤ 1.2× `runsc restore` of the same image';
  return measureRow('resume', 'resume a hibernated small session → first output', target, async () => {
    const sandbox = await Sandbox.create(context.connection);
    const raw = new RawRunsc(context.work, context.rootfsDir, 'resume');
    const imageDir = join(context.work, 'floor-resume-image');
    try {
      await sandbox.commands.run(['true']);
      raw.start();
      raw.exec(['true']);
      const airlock: number[] = [];
      const floor: number[] = [];
      const suspends: number[] = [];
      for (let i = 0; i < context.options.slowSamples; i += 1) {
        suspends.push(await timed(() => sandbox.suspend()));
        airlock.push(await timed(async () => {
          await sandbox.resume();
          await sandbox.commands.run(['true']);
        }));
        raw.checkpoint(imageDir);
        floor.push(await timed(() => {
          raw.restore(imageDir);
          raw.exec(['true']);
        }));
      }
      const ratio = quantile(airlock, 0.5) / quantile(floor, 0.5);
      return {
        operation: 'resume a hibernated small session → first output',
        target,
        unit: 'ms',
        airlock: figure('Airlock', airlock),
        floor: figure('floor: `runsc restore` of the same rootfs + `runsc exec true`', floor),
        otherFloors: [],
        met: ratio <= 1.2,
        notes: ['a fresh Debian session (default contract), suspended through the SDK outside the clock'],
        details: { suspendMs: { p50: quantile(suspends, 0.5), samples: suspends } },
      };
    } finally {
      raw.destroy();
      await sandbox.kill().catch(() => undefined);
    }
  });
}

function suspendRow(context: BenchContext): Promise<RowResult> {
  const target = '≤ 1 s per GB held';
  return measureRow('suspend', `suspend a session holding ${HELD_MB} MB (ms per GB held)`, target, async () => {
    const script = holdMemoryScript(HELD_MB);
    const sandbox = await Sandbox.create({ ...context.connection, contract: { version: 1, resources: { memoryMb: 1024 } } });
    // runsc restore kills what `runsc exec` started, so the holder is the floor sandbox's first process
    const holder = new RawRunsc(context.work, context.rootfsDir, 'hold', ['/usr/bin/python3', '-c', script]);
    const imageDir = join(context.work, 'floor-suspend-image');
    try {
      await sandbox.files.write('/workspace/hold.py', script);
      await sandbox.commands.run(startHolderCommand('/workspace/hold.py'));
      holder.start();
      holder.exec(['sh', '-c', 'while [ ! -f /tmp/held ]; do sleep 0.1; done']);
      const airlock: number[] = [];
      const floor: number[] = [];
      const cgroupBytes: number[] = [];
      const resumes: number[] = [];
      for (let i = 0; i < context.options.slowSamples; i += 1) {
        cgroupBytes.push((await context.driver.usage(await handleOf(context, sandbox))).memoryBytes);
        airlock.push((await timed(() => sandbox.suspend())) / HELD_GB);
        resumes.push(await timed(async () => {
          await sandbox.resume();
          await sandbox.commands.run(['true']);
        }));
        floor.push((await timed(() => holder.checkpoint(imageDir))) / HELD_GB);
        holder.restore(imageDir);
        holder.exec(['true']);
      }
      return {
        operation: `suspend a session holding ${HELD_MB} MB (ms per GB held)`,
        target,
        unit: 'ms/GB',
        airlock: figure('Airlock', airlock),
        floor: figure('floor: `runsc checkpoint --compression=none` of a sandbox holding the same', floor),
        otherFloors: [],
        met: quantile(airlock, 0.5) <= 1000,
        notes: [`ms per GB = suspend ms ÷ ${HELD_GB} GB (the ${HELD_MB} MiB the Python holder fills); the session's cgroup held ${(quantile(cgroupBytes, 0.5) / 2 ** 20).toFixed(0)} MiB p50 before each suspend`],
        details: { cgroupBytesBeforeSuspend: cgroupBytes, resumeMs: { p50: quantile(resumes, 0.5), samples: resumes } },
      };
    } finally {
      holder.destroy();
      await sandbox.kill().catch(() => undefined);
    }
  });
}
