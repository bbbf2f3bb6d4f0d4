/**
 * Issue 18's figures: screenshot and action round trips through the SDK,
 * beside the floor (the same xwd / xdotool run by a bare `runsc exec` into
 * the session's sandbox, in the same run); memory of an idle desktop session;
 * suspend and resume with Chromium open; fork into 4 desktop branches to the
 * first screenshot of each. Usage (root, needs debian-bookworm-desktop):
 * npx tsx bench/desktop.bench.ts [samples]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '@airlock/runtime';
import { Sandbox } from '@airlock/sdk';
import { printComparisons, quantile, timed, type Comparison } from './stats.js';

const samples = Number.parseInt(process.argv[2] ?? '30', 10);
const work = mkdtempSync('/var/tmp/airlock-bench-');
const server = await startServer({ dataDir: join(work, 'data'), host: '127.0.0.1', port: 0, token: 'bench' });
const connection = { url: server.url, token: 'bench' };
const CONTRACT = { version: 1, resources: { memoryMb: 1536 } };
const PAGE = '<!doctype html><title>bench</title><body style="margin:0;background:#fafafa"><textarea style="width:90vw;height:80vh"></textarea></body>';

const runscRoot = join(work, 'data', 'runsc', 'runsc');
/** A bare runsc exec into the session's sandbox: the floor under each desktop command. */
function floor(sandbox: Sandbox, argv: string[]): void {
  const sandboxId = (sandbox.info as unknown as { sandboxId: string | null }).sandboxId;
  if (!sandboxId) throw new Error('no sandbox');
  execFileSync('runsc', [`--root=${runscRoot}`, 'exec', '--env=DISPLAY=:0', `airlock-${sandboxId}`, ...argv], { stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 << 20 });
}

/** Resident and page-cache memory of the session's sandbox, from its memory cgroup, in MB. */
function cgroupMemory(sandbox: Sandbox): string {
  const sandboxId = (sandbox.info as unknown as { sandboxId: string | null }).sandboxId;
  const stat = readFileSync(`/sys/fs/cgroup/memory/airlock/${sandboxId}/memory.stat`, 'utf8');
  const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(stat)?.[1] ?? 0) / 1048576;
  return `rss ${value('total_rss').toFixed(0)} MB, page cache ${value('total_cache').toFixed(0)} MB`;
}

const rows: Comparison[] = [];
const notes: string[] = [];
try {
  const sandbox = await Sandbox.create({ ...connection, image: 'debian-bookworm-desktop', contract: CONTRACT });
  await sandbox.files.write('/workspace/bench.html', PAGE);
  await sandbox.commands.run('airlock-browser file:///workspace/bench.html');
  for (let attempt = 0; attempt < 100; attempt++) {
    if ((await sandbox.commands.run(['xdotool', 'getactivewindow', 'getwindowname'])).stdout.startsWith('bench')) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await new Promise((resolve) => setTimeout(resolve, 3000));
  await sandbox.getInfo();
  notes.push(`idle desktop session, Chromium on one page: ${cgroupMemory(sandbox)} (the sandbox's memory cgroup)`);

  const shot = { operation: 'screenshot (SDK → PNG)', airlock: [] as number[], floor: [] as number[] };
  const click = { operation: 'action: click (SDK)', airlock: [] as number[], floor: [] as number[] };
  const type = { operation: 'action: type 5 characters (SDK)', airlock: [] as number[], floor: [] as number[] };
  rows.push(shot, click, type);
  for (let i = 0; i < samples; i++) {
    shot.airlock.push(await timed(() => sandbox.desktop.screenshot()));
    shot.floor.push(await timed(() => floor(sandbox, ['xwd', '-root', '-silent'])));
    click.airlock.push(await timed(() => sandbox.desktop.click(600, 400)));
    click.floor.push(await timed(() => floor(sandbox, ['xdotool', 'mousemove', '600', '400', 'click', '1'])));
    type.airlock.push(await timed(() => sandbox.desktop.type('hello')));
    type.floor.push(await timed(() => floor(sandbox, ['xdotool', 'type', '--delay', '12', '--', 'hello'])));
  }
  printComparisons('Desktop round trips (floor: the same command by a bare runsc exec)', rows);

  const suspend: number[] = [];
  const resume: number[] = [];
  for (let i = 0; i < 3; i++) {
    suspend.push(await timed(() => sandbox.suspend()));
    resume.push(await timed(async () => {
      await sandbox.resume();
      await sandbox.desktop.screenshot();
    }));
  }
  const image = (await sandbox.getInfo()).meters as unknown as { snapshotBytes: number };
  notes.push(`suspend with Chromium open: p50 ${quantile(suspend, 0.5).toFixed(0)} ms (n=3, memory image ${(image.snapshotBytes / 1048576).toFixed(0)} MB)`);
  notes.push(`resume → first screenshot: p50 ${quantile(resume, 0.5).toFixed(0)} ms (n=3)`);

  const forked: number[] = [];
  for (let round = 0; round < 2; round++) {
    let branches: Sandbox[] = [];
    forked.push(await timed(async () => {
      branches = await sandbox.fork({ count: 4 });
      await Promise.all(branches.map((branch) => branch.desktop.screenshot()));
    }));
    await Promise.all(branches.map((branch) => branch.kill()));
  }
  notes.push(`fork into 4 desktop branches → a screenshot from each: ${forked.map((ms) => ms.toFixed(0)).join(' ms, ')} ms`);
  await sandbox.kill();
} finally {
  for (const note of notes) process.stdout.write(`- ${note}\n`);
  // The server leaves machines running when it closes: end every session first.
  for (const info of await Sandbox.list(connection)) {
    if (info.state !== 'terminated') await (await Sandbox.connect(info.id, connection)).kill().catch(() => undefined);
  }
  await server.close();
  rmSync(work, { recursive: true, force: true });
}
