/** What every row of the issue 11 harness shares: one server, its driver, the image, the options. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, openDataDir, openImageCatalog, type RunningServer } from '@airlock/runtime';
import type { Sandbox } from '@airlock/sdk';
import type { SandboxDriver, SandboxHandle } from '../../packages/runtime/src/core/sandbox-driver.js';

/** The harness's command line. */
export interface HarnessOptions {
  /** samples of the fast rows (issue 11: at least 20) */
  samples: number;
  /** samples of the slow rows (suspend, resume: seconds each) */
  slowSamples: number;
  /** rounds of the fork of 16 */
  forkRounds: number;
  /** calls of the agent-trace replay */
  traceCalls: number;
  /** sessions to create and suspend in the last row */
  suspended: number;
  /** row ids to run; empty: all */
  only: string[];
  /** sandboxes the server keeps warm (`startServer({ warmPool })`) */
  warmPool: number;
}

/** The server under test and how to reach it. */
export interface BenchContext {
  options: HarnessOptions;
  /** set on Ctrl-C: loops that make sessions stop making more */
  interrupted?: boolean;
  work: string;
  server: RunningServer;
  connection: { url: string; token: string };
  driver: SandboxDriver;
  /** the rootfs of the image the sessions run (debian-bookworm), for the floors */
  rootfsDir: string;
}

/**
 * The contract of a session the harness also drives on the driver behind the server's back: the
 * server sees no activity from those calls, so without keepAwake it would pause the machine after
 * its idle timeout (75 s by default) under the floor's feet.
 */
export const AWAKE_CONTRACT = { version: 1, idle: { suspendAfterSeconds: 300, keepAwake: true } };

/** The server's own gVisor driver: a second driver on the same state root would take over the machines' agents. */
export function driverOf(server: RunningServer): SandboxDriver {
  const driver = server.services.sessions.drivers.get('gvisor');
  if (!driver) throw new Error('the server has no gvisor driver');
  return driver;
}

/** Starts the server with its warm pool and finds the image's rootfs. */
export async function openContext(options: HarnessOptions, work: string): Promise<BenchContext> {
  // The image the tests build is shared through this directory; a data dir of its own would need a build.
  if (!process.env['AIRLOCK_IMAGES_DIR'] && existsSync('/var/tmp/airlock-test/images')) process.env['AIRLOCK_IMAGES_DIR'] = '/var/tmp/airlock-test/images';
  const dataDir = join(work, 'data');
  const server = await startServer({ dataDir, host: '127.0.0.1', port: 0, token: 'bench', maxForkBranches: 64, warmPool: options.warmPool });
  const image = await openImageCatalog(openDataDir(dataDir)).get('debian-bookworm');
  return { options, work, server, connection: { url: server.url, token: 'bench' }, driver: driverOf(server), rootfsDir: image.rootfsDir };
}

/** The sandbox handle of a session, as the server holds it now (it changes on resume). */
export async function handleOf(context: BenchContext, sandbox: Sandbox): Promise<SandboxHandle> {
  const handle = (await context.server.services.sessions.get(sandbox.id)).sandbox;
  if (!handle) throw new Error(`session ${sandbox.id} has no sandbox`);
  return handle;
}

/** The warm pools as GET /v1/warm-pool shows them (core/warm-pool.ts), undefined from a server without them. */
export interface PoolStatus {
  size: number;
  classes: { imageName: string; resources: Record<string, unknown>; ready: number; starting: number; claims: number; misses: number }[];
  lastFailure?: { code: string; message: string; at: string };
}

/** GET /v1/warm-pool, or undefined when the server does not answer it. */
export async function poolStatus(context: BenchContext): Promise<PoolStatus | undefined> {
  const response = await fetch(`${context.connection.url}/v1/warm-pool`, { headers: { authorization: `Bearer ${context.connection.token}` } }).catch(
    () => undefined,
  );
  if (!response?.ok) return undefined;
  const body = (await response.json().catch(() => undefined)) as PoolStatus | undefined;
  return body && Array.isArray(body.classes) ? body : undefined;
}

/**
 * Waits until the warm pool is refilled (a class holds `size` ready machines and none is
 * starting), so that the next create claims a warm machine; at most 30 s. A server without warm
 * pools gets a 1.5 s sleep instead (a benchmark may sleep; a test may not).
 */
export async function waitForWarmPool(context: BenchContext): Promise<void> {
  if (context.options.warmPool === 0) return;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const pool = await poolStatus(context);
    if (!pool) return sleep(1500);
    if (pool.size === 0) return;
    if (pool.classes.some((entry) => entry.ready >= pool.size) && pool.classes.every((entry) => entry.starting === 0)) return;
    await sleep(100);
  }
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Kills every session of the server that is not terminated; never throws. */
export async function killAll(context: BenchContext): Promise<void> {
  for (const session of await context.server.services.sessions.list().catch(() => [])) {
    if (session.state !== 'terminated') await context.server.services.sessions.terminate(session.id).catch(() => undefined);
  }
}
