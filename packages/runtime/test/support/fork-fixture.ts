/**
 * The core fixture plus the snapshot and fork services, over the same fake
 * driver, store, disks and artifacts; with a clock the test can move.
 */
import { join } from 'node:path';
import { coreFixture, DirectoryDisks, StaticImages, type CoreFixture } from './core-fixture.js';
import { SnapshotService } from '../../src/core/snapshot-service.js';
import { ForkService } from '../../src/core/fork-service.js';
import type { Clock } from '../../src/core/clock.js';

/** A clock that stands still until moved. */
export class ManualClock implements Clock {
  private current = Date.now();
  now(): Date {
    return new Date(this.current);
  }
  advance(ms: number): void {
    this.current += ms;
  }
}

/** The wired services. */
export interface ForkFixture extends CoreFixture {
  disks: DirectoryDisks;
  clock: ManualClock;
  snapshots: SnapshotService;
  forks: ForkService;
}

/** Builds a fresh fixture; `maxBranches` defaults to 64. */
export function forkFixture(options: { maxBranches?: number; concurrency?: number } = {}): ForkFixture {
  const fx = coreFixture();
  // Same root as the disks inside the core fixture: both see the same directories.
  const disks = new DirectoryDisks(join(fx.dir, 'disks'));
  const clock = new ManualClock();
  const snapshots = new SnapshotService({ store: fx.store, driver: fx.driver, disks, artifacts: fx.artifacts, sessions: fx.sessions, clock });
  const forks = new ForkService({
    store: fx.store,
    driver: fx.driver,
    disks,
    images: new StaticImages(),
    artifacts: fx.artifacts,
    sessions: fx.sessions,
    snapshots,
    hooks: fx.sessions.hooks,
    clock,
    ...(options.maxBranches === undefined ? {} : { maxBranches: options.maxBranches }),
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
  });
  return { ...fx, disks, clock, snapshots, forks };
}
