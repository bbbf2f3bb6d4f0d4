/**
 * Issue 18's figures: screenshot and action round trips through the SDK,
 * beside three floors, in the same run: the same xwd / xdotool by a bare
 * `runsc exec` into the session's sandbox, by the in-sandbox agent straight
 * on the server's driver (no HTTP, no pipeline), and by the machine's
 * desktop helper straight on the driver (what the pipeline uses); the steps a round
 * trip is made of, each timed alone; memory of an idle desktop session;
 * suspend and resume with Chromium open; fork into 4 desktop branches to the
 * first screenshot of each. Usage (root, needs debian-bookworm-desktop):
 * npx tsx bench/desktop.bench.ts [samples]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '@airlock/runtime';
import { Sandbox } from '@airlock/sdk';
import type { SandboxDriver, SandboxHandle } from '@airlock/runtime';
import { decodeXwd, encodePng, shrink } from '../packages/runtime/dist/src/core/screen-image.js';
import { DesktopHelpers } from '../packages/runtime/dist/src/core/desktop-helper.js';
import type { DesktopRequest } from '../packages/runtime/dist/src/core/desktop-operations.js';
import { loadAverage, printFloorComparisons, quantile, timed, type FloorComparison } from './stats.js';

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

/** The same command through the in-sandbox agent on the server's own driver: the floor under what the pipeline runs. */
async function agentFloor(driver: SandboxDriver, handle: SandboxHandle, argv: string[]): Promise<Buffer> {
  const stdout: Buffer[] = [];
  await driver.exec(handle, { argv, cwd: '/', env: { DISPLAY: ':0' }, timeoutMs: 30_000, onStdout: (chunk) => stdout.push(chunk) });
  return Buffer.concat(stdout);
}

/** Resident and page-cache memory of the session's sandbox, from its memory cgroup, in MB. */
function cgroupMemory(sandbox: Sandbox): string {
  const sandboxId = (sandbox.info as unknown as { sandboxId: string | null }).sandboxId;
  const stat = readFileSync(`/sys/fs/cgroup/memory/airlock/${sandboxId}/memory.stat`, 'utf8');
  const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(stat)?.[1] ?? 0) / 1048576;
  return `rss ${value('total_rss').toFixed(0)} MB, page cache ${value('total_cache').toFixed(0)} MB`;
}

const rows: FloorComparison[] = [];
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
  notes.push(`load at the start: ${loadAverage()}`);
  notes.push(`idle desktop session, Chromium on one page: ${cgroupMemory(sandbox)} (the sandbox's memory cgroup)`);

  // The server's own driver: a second driver on the same state root would take over the machine's agent.
  const session = await server.services.sessions.get(sandbox.id);
  const handle = session.sandbox;
  if (!handle) throw new Error('no sandbox');
  const driver = server.services.sessions.drivers.forHandle(handle);
  // Like the server's: its kept connection closes before a suspend or fork (an open stream stops the agent from parking).
  const locks = server.services.sessions.locks;
  const helpers = new DesktopHelpers({ mayKeep: (sessionId) => !locks.exclusiveWanted(sessionId) });
  locks.whenExclusiveRequested((sessionId) => helpers.closeIdle(sessionId));
  const helper = helpers.runner(driver, handle, () => Promise.reject(new Error('the machine has no desktop helper')));
  /** The same command through the machine's desktop helper, on the server's driver. */
  const helperFloor = async (argv: string[], extra: Partial<DesktopRequest> = {}) =>
    (await helper({ argv, env: { DISPLAY: ':0', PATH: '/usr/bin:/bin' }, timeoutMs: 30_000, ...extra })).stdout;
  const shot = { operation: 'screenshot (SDK → PNG)', airlock: [] as number[], floors: [[], [], []] as number[][] };
  const click = { operation: 'action: click (SDK)', airlock: [] as number[], floors: [[], [], []] as number[][] };
  const type = { operation: 'action: type 5 characters (SDK)', airlock: [] as number[], floors: [[], [], []] as number[][] };
  rows.push(shot, click, type);
  const steps = {
    title: [] as number[],
    xwd: [] as number[],
    decode: [] as number[],
    png: [] as number[],
    thumbnail: [] as number[],
    xdotoolClick: [] as number[],
    helperTitle: [] as number[],
    helperScreen: [] as number[],
    helperThumbnail: [] as number[],
    helperClick: [] as number[],
    pipelineClick: [] as number[],
  };
  await helperFloor(['/usr/bin/xdotool', 'getmouselocation']); // starts the helper, if the screenshot above did not
  const loadBefore = loadAverage();
  for (let i = 0; i < samples; i++) {
    shot.airlock.push(await timed(() => sandbox.desktop.screenshot()));
    shot.floors[0]?.push(await timed(() => floor(sandbox, ['xwd', '-root', '-silent'])));
    shot.floors[1]?.push(await timed(() => agentFloor(driver, handle, ['xwd', '-root', '-silent'])));
    shot.floors[2]?.push(await timed(() => helperFloor(['/usr/bin/xwd', '-root', '-silent'])));
    click.airlock.push(await timed(() => sandbox.desktop.click(600, 400)));
    click.floors[0]?.push(await timed(() => floor(sandbox, ['xdotool', 'mousemove', '600', '400', 'click', '1'])));
    click.floors[1]?.push(await timed(() => agentFloor(driver, handle, ['xdotool', 'mousemove', '600', '400', 'click', '1'])));
    click.floors[2]?.push(await timed(() => helperFloor(['/usr/bin/xdotool', 'mousemove', '600', '400', 'click', '1'])));
    type.airlock.push(await timed(() => sandbox.desktop.type('hello')));
    type.floors[0]?.push(await timed(() => floor(sandbox, ['xdotool', 'type', '--delay', '12', '--', 'hello'])));
    type.floors[1]?.push(await timed(() => agentFloor(driver, handle, ['xdotool', 'type', '--delay', '12', '--', 'hello'])));
    type.floors[2]?.push(await timed(() => helperFloor(['/usr/bin/xdotool', 'type', '--delay', '12', '--', 'hello'])));
    // The steps of a round trip, each alone.
    steps.title.push(await timed(() => agentFloor(driver, handle, ['xdotool', 'getactivewindow', 'getwindowname'])));
    let dump = Buffer.alloc(0);
    steps.xwd.push(await timed(async () => (dump = await agentFloor(driver, handle, ['xwd', '-root', '-silent']))));
    let pixels = decodeXwd(dump);
    steps.decode.push(await timed(() => (pixels = decodeXwd(dump))));
    steps.png.push(await timed(() => encodePng(pixels)));
    steps.thumbnail.push(await timed(() => encodePng(shrink(pixels, 320, 320))));
    steps.xdotoolClick.push(await timed(() => agentFloor(driver, handle, ['xdotool', 'mousemove', '600', '400', 'click', '1', 'getmouselocation', '--shell'])));
    steps.helperTitle.push(await timed(() => helperFloor(['/usr/bin/xdotool', 'getactivewindow', 'getwindowname'])));
    steps.helperScreen.push(await timed(() => helperFloor(['/usr/bin/xwd', '-root', '-silent'])));
    steps.helperThumbnail.push(await timed(() => helperFloor(['/usr/bin/xwd', '-root', '-silent'], { shrinkTo: 320 })));
    steps.pipelineClick.push(await timed(() => server.services.pipeline.submit(sandbox.id, 'desktop.act', { action: 'click', x: 600, y: 400 })));
    steps.helperClick.push(await timed(() => helperFloor(['/usr/bin/xdotool', 'mousemove', '600', '400', 'click', '--repeat', '1', '--delay', '80', '1', 'getmouselocation', '--shell'])));
  }
  printFloorComparisons(`Desktop round trips (load before ${loadBefore}, after ${loadAverage()})`, ['runsc exec', 'agent exec', 'helper'], rows);
  const stepRow = (name: string, values: number[]) => `| ${name} | ${quantile(values, 0.5).toFixed(1)} | ${quantile(values, 0.99).toFixed(1)} |`;
  process.stdout.write(
    [
      '### Steps of a round trip, each timed alone',
      '',
      '| step | p50 (ms) | p99 (ms) |',
      '|---|---|---|',
      stepRow('agent exec `xdotool getactivewindow getwindowname` (the title)', steps.title),
      stepRow('agent exec `xwd -root` (the screen, 4 MB)', steps.xwd),
      stepRow('decode the dump on the host', steps.decode),
      stepRow('encode the PNG on the host', steps.png),
      stepRow('shrink + encode the thumbnail on the host', steps.thumbnail),
      stepRow('agent exec `xdotool mousemove click getmouselocation`', steps.xdotoolClick),
      stepRow('helper: the title', steps.helperTitle),
      stepRow('helper: the screen (4 MB dump, compressed in the machine, inflated on the host)', steps.helperScreen),
      stepRow('helper: the screen for a thumbnail (every 4th pixel)', steps.helperThumbnail),
      stepRow('helper: mousemove, click, pointer position', steps.helperClick),
      stepRow('a click through the pipeline in process (no HTTP, no SDK)', steps.pipelineClick),
      '',
      '',
    ].join('\n'),
  );

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
