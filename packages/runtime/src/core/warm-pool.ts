/**
 * Warm pools: machines started before anyone asks for them, so that
 * `sessions create` only claims one. A pool machine is an ordinary sandbox
 * with its own disk, started under a pool id (`pool_…`) for one class of
 * session (driver, image, resources, filesystem rules); claiming it moves the
 * disk under the session's id while the machine runs, makes the driver name
 * the session as its owner, and gives the machine a fresh identity (hostname,
 * machine id, entropy) before the session's first call. Nothing of any
 * session ever ran in a pool machine.
 *
 * Pools hold running machines, not paused ones: on this host an idle gVisor
 * sandbox costs the same (~14 MB, a few % of a core) paused or not, and a
 * paused one adds a `runsc resume` to every claim. Pools live only in this
 * process: at start-up the reconciler removes what a previous process left
 * (no session owns it), and the pools refill in the background.
 *
 * Classes: the server's default session (default image and contract) is
 * always kept warm; any other class a create asked for is kept warm too
 * until it has not been asked for in `classIdleMs`. Networked sessions never
 * come from a pool (their namespace is made with the machine).
 */
import { randomBytes } from 'node:crypto';
import type { SandboxDriver, SandboxHandle, SandboxResources } from './sandbox-driver.js';
import type { SandboxDrivers } from './sandbox-drivers.js';
import type { SessionDisks } from './session-disks.js';
import type { ImageCatalog, ImageRecord } from './image-catalog.js';
import type { SandboxSpecs } from './sandbox-specs.js';
import type { SessionContract } from './session-contract.js';
import type { SessionRecord } from './session.js';
import { newId } from './ids.js';

/** What a pool machine is made for: sessions of the same class can claim it. */
export interface WarmPoolClass {
  driver: string;
  imageName: string;
  resources: SandboxResources;
  filesystem: SessionContract['filesystem'];
}

/** A claimed machine, ready for the session's first call. */
export interface ClaimedMachine {
  handle: SandboxHandle;
  /** the pool id the machine was started under */
  poolId: string;
  /** how long the claim took (disk transfer, adoption, identity) */
  claimMs: number;
}

/** Figures of the pools, for the host view. */
export interface WarmPoolStatus {
  /** machines kept ready per class */
  size: number;
  classes: { driver: string; imageName: string; resources: SandboxResources; ready: number; starting: number; claims: number; misses: number }[];
  /** the last failure to start a pool machine, if the last attempt failed */
  lastFailure?: { code: string; message: string; at: string };
}

/** Collaborators of the pools. */
export interface WarmPoolDeps {
  drivers: SandboxDrivers;
  disks: SessionDisks;
  images: ImageCatalog;
  specs: SandboxSpecs;
  /** called with each failure to start or dispose of a pool machine (the pool retries on its own) */
  onError?: (doing: string, error: unknown) => void;
}

/** Options of the pools. */
export interface WarmPoolOptions {
  /** machines kept ready per class; 0 disables pools */
  size: number;
  /** the class always kept warm (the server's default session); absent: only classes creates asked for */
  defaultClass?: Omit<WarmPoolClass, 'driver'> & { driver?: string };
  /** how long a class nobody asks for stays warm; default 10 minutes */
  classIdleMs?: number;
  /** classes kept warm at once, the default one included; default 4 */
  maxClasses?: number;
  /** wait after a failed start before the next attempt; default 30 s */
  retryMs?: number;
}

interface PoolMachine {
  poolId: string;
  handle: SandboxHandle;
  /** the image content it started from: a rebuilt image makes it stale */
  imageDigest: string;
  driver: string;
}

interface ClassPool {
  key: string;
  poolClass: WarmPoolClass;
  ready: PoolMachine[];
  starting: number;
  claims: number;
  misses: number;
  /** when a create last asked for this class (the default class never expires) */
  wantedAt: number;
  permanent: boolean;
}

const DEFAULT_CLASS_IDLE_MS = 10 * 60_000;
const DEFAULT_MAX_CLASSES = 4;
const DEFAULT_RETRY_MS = 30_000;

/** Keeps machines warm per class and hands them to new sessions. */
export class WarmPool {
  private readonly pools = new Map<string, ClassPool>();
  private readonly size: number;
  private readonly classIdleMs: number;
  private readonly maxClasses: number;
  private readonly retryMs: number;
  private filling: Promise<void> | undefined;
  private refillAgain = false;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private lastFailure: WarmPoolStatus['lastFailure'];

  constructor(
    private readonly deps: WarmPoolDeps,
    options: WarmPoolOptions,
  ) {
    if (!Number.isInteger(options.size) || options.size < 0) throw new RangeError(`warm pool size must be a whole number >= 0, got ${options.size}`);
    this.size = options.size;
    this.classIdleMs = options.classIdleMs ?? DEFAULT_CLASS_IDLE_MS;
    this.maxClasses = options.maxClasses ?? DEFAULT_MAX_CLASSES;
    this.retryMs = options.retryMs ?? DEFAULT_RETRY_MS;
    if (this.size > 0 && options.defaultClass) {
      const poolClass = { ...options.defaultClass, driver: options.defaultClass.driver ?? deps.drivers.default.name };
      if (this.poolable(poolClass.driver)) this.pools.set(classKey(poolClass), newClassPool(poolClass, true));
    }
  }

  /** Starts filling the pools in the background. */
  start(): void {
    this.refill();
  }

  /**
   * A warm machine for the session, or undefined when its class has none ready (the caller starts one
   * cold; the class is kept warm from now on). On any failure the pool machine is thrown away and
   * undefined returned: a claim never fails a create that a cold start would have served.
   */
  async claim(session: SessionRecord, image: ImageRecord): Promise<ClaimedMachine | undefined> {
    if (this.size === 0 || this.closed || session.mode !== 'machine' || session.contract.network !== undefined) return undefined;
    const driver = this.deps.drivers.forSession(session);
    if (!this.poolable(driver.name)) return undefined;
    const poolClass: WarmPoolClass = { driver: driver.name, imageName: image.name, resources: session.resources, filesystem: session.contract.filesystem };
    const pool = this.poolOf(poolClass);
    pool.wantedAt = Date.now();
    const machine = await this.takeFresh(pool, image);
    this.refill();
    if (!machine) {
      pool.misses += 1;
      return undefined;
    }
    const begun = performance.now();
    try {
      const adopt = driver.adopt?.bind(driver);
      if (!adopt) throw new Error(`driver ${driver.name} cannot adopt`);
      // The identity goes through the agent, the disk and the driver's records through the host: side by side.
      const identity = { hostname: session.id.replace(/_/g, '-'), machineId: randomBytes(16).toString('hex'), entropy: randomBytes(64) };
      const [adopted, personalized] = await Promise.allSettled([
        this.deps.disks
          .transfer(machine.poolId, session.id)
          .then((disk) => adopt(machine.handle, { sessionId: session.id, disk: { kind: 'directory', path: disk } })),
        driver.personalize(machine.handle, identity),
      ]);
      if (adopted.status === 'rejected') throw adopted.reason;
      if (personalized.status === 'rejected') throw personalized.reason;
      const handle = adopted.value;
      pool.claims += 1;
      return { handle, poolId: machine.poolId, claimMs: Math.round(performance.now() - begun) };
    } catch (error) {
      this.deps.onError?.(`claiming warm machine ${machine.poolId} for session ${session.id}`, error);
      await driver.destroy(machine.handle).catch(() => undefined);
      await this.deps.disks.destroy(session.id).catch(() => undefined);
      await this.deps.disks.destroy(machine.poolId).catch(() => undefined);
      return undefined;
    }
  }

  /** The first ready machine started from the image as it is now; stale ones (a rebuilt image) are destroyed. */
  private async takeFresh(pool: ClassPool, image: ImageRecord): Promise<PoolMachine | undefined> {
    for (let machine = pool.ready.shift(); machine; machine = pool.ready.shift()) {
      if (machine.imageDigest === image.digest) return machine;
      void this.dispose(machine);
    }
    return undefined;
  }

  /** The pools' figures. */
  status(): WarmPoolStatus {
    return {
      size: this.size,
      classes: [...this.pools.values()].map((pool) => ({
        driver: pool.poolClass.driver,
        imageName: pool.poolClass.imageName,
        resources: pool.poolClass.resources,
        ready: pool.ready.length,
        starting: pool.starting,
        claims: pool.claims,
        misses: pool.misses,
      })),
      ...(this.lastFailure ? { lastFailure: this.lastFailure } : {}),
    };
  }

  /** Resolves once no machine is being started (tests and benchmarks wait on it). */
  async settled(): Promise<void> {
    while (this.filling) await this.filling;
  }

  /** Stops refilling and destroys every unclaimed machine with its disk. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    await this.settled();
    for (const pool of this.pools.values()) {
      for (const machine of pool.ready.splice(0)) await this.dispose(machine);
    }
  }

  /** Whether sessions of this driver can come from a pool. */
  private poolable(driverName: string): boolean {
    const driver: SandboxDriver | undefined = this.deps.drivers.all().find((each) => each.name === driverName);
    return driver?.adopt !== undefined && driver.volumes.disk === 'directory';
  }

  private poolOf(poolClass: WarmPoolClass): ClassPool {
    const key = classKey(poolClass);
    let pool = this.pools.get(key);
    if (!pool) {
      pool = newClassPool(poolClass, false);
      this.pools.set(key, pool);
    }
    return pool;
  }

  /** Begins a fill round unless one runs (then it runs once more when it ends). */
  private refill(): void {
    if (this.closed || this.size === 0) return;
    if (this.filling) {
      this.refillAgain = true;
      return;
    }
    this.filling = this.fill()
      .catch((error: unknown) => this.deps.onError?.('refilling the warm pool', error))
      .finally(() => {
        this.filling = undefined;
        if (this.refillAgain && !this.closed) {
          this.refillAgain = false;
          this.refill();
        }
      });
  }

  /** Starts machines one at a time until every class wanted has `size` ready; drops classes nobody asks for. */
  private async fill(): Promise<void> {
    for (;;) {
      if (this.closed) return;
      await this.retire();
      const pool = [...this.pools.values()].find((each) => each.ready.length + each.starting < this.size);
      if (!pool) return;
      pool.starting += 1;
      try {
        const machine = await this.startMachine(pool.poolClass);
        if (this.closed || !this.pools.has(pool.key)) await this.dispose(machine);
        else pool.ready.push(machine);
        this.lastFailure = undefined;
      } catch (error) {
        this.lastFailure = {
          code: String((error as { code?: unknown }).code ?? 'DRIVER_FAILED'),
          message: error instanceof Error ? error.message : String(error),
          at: new Date().toISOString(),
        };
        this.deps.onError?.(`starting a warm machine of ${pool.poolClass.imageName}`, error);
        // A class that cannot start (its image was removed, the host is full) is tried again later, not in a loop.
        clearTimeout(this.retryTimer);
        this.retryTimer = setTimeout(() => this.refill(), this.retryMs);
        this.retryTimer.unref();
        return;
      } finally {
        pool.starting -= 1;
      }
    }
  }

  /** Forgets classes nobody asked for lately (and the least wanted beyond the limit), destroying their machines. */
  private async retire(): Promise<void> {
    const now = Date.now();
    const transient = [...this.pools.values()].filter((pool) => !pool.permanent).sort((a, b) => b.wantedAt - a.wantedAt);
    const room = this.maxClasses - (this.pools.size - transient.length);
    for (const [index, pool] of transient.entries()) {
      if (now - pool.wantedAt <= this.classIdleMs && index < room) continue;
      this.pools.delete(pool.key);
      for (const machine of pool.ready.splice(0)) await this.dispose(machine);
    }
  }

  private async startMachine(poolClass: WarmPoolClass): Promise<PoolMachine> {
    const driver = this.deps.drivers.get(poolClass.driver);
    const image = await this.deps.images.get(poolClass.imageName);
    const poolId = newId('pool');
    await this.deps.disks.create(poolId, poolClass.resources.diskMb);
    try {
      const spec = await this.deps.specs.specForPool(poolId, driver, image, poolClass.resources, poolClass.filesystem);
      const handle = await driver.start(spec);
      // The first command of a fresh machine pays for loading the shell's pages through the gofer
      // (measured: ~2x a later one): pay it here, off the session's first call. An image without a shell
      // is still a good machine.
      await driver.exec(handle, { argv: ['/bin/sh', '-c', 'true'], cwd: '/', env: {}, timeoutMs: 10_000 }).catch(() => undefined);
      return { poolId, handle, imageDigest: image.digest, driver: driver.name };
    } catch (error) {
      await this.deps.disks.destroy(poolId).catch(() => undefined);
      throw error;
    }
  }

  private async dispose(machine: PoolMachine): Promise<void> {
    try {
      await this.deps.drivers.get(machine.driver).destroy(machine.handle);
      await this.deps.disks.destroy(machine.poolId);
    } catch (error) {
      this.deps.onError?.(`removing warm machine ${machine.poolId}`, error);
    }
  }
}

function newClassPool(poolClass: WarmPoolClass, permanent: boolean): ClassPool {
  return { key: classKey(poolClass), poolClass, ready: [], starting: 0, claims: 0, misses: 0, wantedAt: Date.now(), permanent };
}

/** Sessions of one class can share a pool: same driver, image, limits and filesystem rules (they are mounts made at start). */
function classKey(poolClass: WarmPoolClass): string {
  const { cpus, memoryMb, diskMb, maxProcesses } = poolClass.resources;
  return JSON.stringify([poolClass.driver, poolClass.imageName, cpus, memoryMb, diskMb, maxProcesses, poolClass.filesystem ?? null]);
}
