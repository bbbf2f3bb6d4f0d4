/**
 * The core wired to the fake driver, a real SQLite store in a temp dir and
 * in-memory disks and images: for fast unit tests of sessions, snapshots,
 * forks and the pipeline. Snapshots and forks run on a clock the test moves.
 */
import { existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync, rmSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { FakeDriver } from '../../src/drivers/fake/fake-driver.js';
import { SandboxDrivers } from '../../src/core/sandbox-drivers.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { SnapshotDirectory } from '../../src/storage/snapshot-directory.js';
import type { SessionService } from '../../src/core/session-service.js';
import type { ApprovalService } from '../../src/core/approval-service.js';
import type { ToolPipeline, CommandAnalysis } from '../../src/core/tool-pipeline.js';
import type { SnapshotService } from '../../src/core/snapshot-service.js';
import type { ForkService } from '../../src/core/fork-service.js';
import type { SessionRecords } from '../../src/core/session-records.js';
import type { SnapshotDisposal } from '../../src/core/snapshot-disposal.js';
import type { Store } from '../../src/core/store.js';
import type { SessionRecord } from '../../src/core/session.js';
import { reconcileSessions, type ReconcileReport } from '../../src/core/session-reconciler.js';
import { buildCoreServices, type CoreServices, type CorePorts } from '../../src/core/core-services.js';
import { AuditLog } from '../../src/audit/audit-log.js';
import { systemClock, type Clock } from '../../src/core/clock.js';
import type { Authorizer, PolicyDecision, AuthorizationContext } from '../../src/core/authorizer.js';
import type { SessionDisks } from '../../src/core/session-disks.js';
import type { ImageCatalog, ImageRecord } from '../../src/core/image-catalog.js';
import { randomBytes } from 'node:crypto';
import { AirlockError } from '../../src/core/errors.js';
import type { DesktopTools } from '../../src/core/desktop-tools.js';
import type { ThumbnailStore } from '../../src/core/screen-thumbnails.js';
import { parseContract, type SessionContract } from '../../src/policy/session-contract.js';

/** Disks as plain temp directories. */
export class DirectoryDisks implements SessionDisks {
  constructor(private readonly root: string) {}
  async create(sessionId: string): Promise<string> {
    return this.ensureMounted(sessionId);
  }
  async ensureMounted(sessionId: string): Promise<string> {
    const dir = join(this.root, sessionId);
    mkdirSync(dir, { recursive: true });
    return dir;
  }
  async transfer(fromId: string, toId: string): Promise<string> {
    if (existsSync(join(this.root, toId))) throw new Error(`disk ${toId} exists`);
    renameSync(join(this.root, fromId), join(this.root, toId));
    return join(this.root, toId);
  }
  /** A directory is never frozen. */
  async thaw(): Promise<void> {}
  /** A directory stands in for the image file: unit tests never attach it. */
  async blockDevice(sessionId: string): Promise<string> {
    return this.ensureMounted(sessionId);
  }
  async clone(_from: string, to: string): Promise<string> {
    return this.ensureMounted(to);
  }
  /** The copy is a JSON file of the disk's files (path → base64 content). */
  async snapshot(sessionId: string, destPath: string): Promise<void> {
    const dir = await this.ensureMounted(sessionId);
    const files: Record<string, string> = {};
    for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
      const path = join(dir, name);
      if (statSync(path).isFile()) files[name] = readFileSync(path).toString('base64');
    }
    writeFileSync(destPath, JSON.stringify(files), { flag: 'wx' });
  }
  async createFrom(sessionId: string, sourcePath: string): Promise<string> {
    const dir = await this.ensureMounted(sessionId);
    const files = JSON.parse(readFileSync(sourcePath, 'utf8')) as Record<string, string>;
    for (const [name, content] of Object.entries(files)) {
      mkdirSync(join(dir, name, '..'), { recursive: true });
      writeFileSync(join(dir, name), Buffer.from(content, 'base64'));
    }
    return dir;
  }
  /** Session ids that have a disk now. */
  existing(): string[] {
    return existsSync(this.root) ? readdirSync(this.root).sort() : [];
  }
  async sync(): Promise<void> {}
  async destroy(sessionId: string): Promise<void> {
    rmSync(join(this.root, sessionId), { recursive: true, force: true });
  }
  async usage() {
    return { sizeBytes: 0, usedBytes: 0 };
  }
  async list(): Promise<string[]> {
    return this.existing();
  }
}

/** One fixed image. */
export class StaticImages implements ImageCatalog {
  readonly image: ImageRecord = {
    name: 'test-image',
    digest: 'sha256:test',
    rootfsDir: '/nonexistent',
    source: 'oci-archive',
    sizeBytes: 0,
    createdAt: new Date(0).toISOString(),
    env: {},
  };
  async list() {
    return [this.image];
  }
  async get(name: string) {
    if (name !== this.image.name && name !== 'debian-bookworm') throw new AirlockError('IMAGE_NOT_FOUND', `no image ${name}`);
    return this.image;
  }
  async buildDebian(): Promise<ImageRecord> {
    return this.image;
  }
  async importOciArchive(): Promise<ImageRecord> {
    return this.image;
  }
  async remove(): Promise<void> {}
  async rootfsBlockDevice(): Promise<string> {
    return `${this.image.rootfsDir}.ext4`;
  }
}

/** An authorizer answering from a function of the context. */
export class ScriptedAuthorizer implements Authorizer {
  readonly seen: AuthorizationContext[] = [];
  decide: (context: AuthorizationContext) => PolicyDecision['decision'] = () => 'allow';
  authorize(_session: unknown, context: AuthorizationContext): PolicyDecision {
    this.seen.push(context);
    const decision = this.decide(context);
    return { decision, policyIds: [`p-${decision}`], reason: `scripted ${decision}`, errors: [], enforced: true };
  }
}

/** Thumbnails kept in memory, unbounded (unit tests only). */
export class MemoryThumbnails implements ThumbnailStore {
  readonly files = new Map<string, Buffer>();
  async put(sessionId: string, name: string, png: Buffer): Promise<void> {
    this.files.set(`${sessionId}/${name}`, png);
  }
  async get(sessionId: string, name: string): Promise<Buffer | undefined> {
    return this.files.get(`${sessionId}/${name}`);
  }
}

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

/** The wired core. */
export interface CoreFixture {
  dir: string;
  /** the default driver */
  driver: FakeDriver;
  drivers: SandboxDrivers;
  store: Store;
  audit: AuditLog;
  /** the audit key of this fixture's chains */
  auditKey: Buffer;
  records: SessionRecords;
  disposal: SnapshotDisposal;
  core: CoreServices;
  disks: DirectoryDisks;
  images: StaticImages;
  sessions: SessionService;
  approvals: ApprovalService;
  pipeline: ToolPipeline;
  authorizer: ScriptedAuthorizer;
  artifacts: SnapshotDirectory;
  /** the clock of snapshots and forks */
  clock: ManualClock;
  snapshots: SnapshotService;
  forks: ForkService;
  desktop: DesktopTools;
  thumbnails: MemoryThumbnails;
  contract(extra?: Record<string, unknown>): SessionContract;
  /** Writes a session record as a crash would have left it, bypassing the transition table (tests only). */
  forceRecord(id: string, change: Partial<SessionRecord>): Promise<SessionRecord>;
  /** Reconciles as the server does at start. */
  reconcile(): Promise<ReconcileReport>;
  close(): Promise<void>;
}

/** Options of the fixture. */
export interface CoreFixtureOptions {
  /** largest fork; default 64 */
  maxBranches?: number;
  /** branches restored at once; default 4 */
  concurrency?: number;
  /** the store to use (default: a fresh SQLite file in the fixture's dir, closed with the fixture; a given one stays open) */
  store?: Store;
  /** the audit key (default: a fresh one) */
  auditKey?: Buffer;
  /** the server this core speaks for; default `srv_test` */
  owner?: string;
  /** drivers besides the default fake one (e.g. a fake microVM driver) */
  extraDrivers?: FakeDriver[];
  /** warm pools of the core (default: none) */
  warmPool?: CorePorts['warmPool'];
}

/** Builds a fresh fixture over the fake driver and in-memory disks and images. */
export function coreFixture(options: CoreFixtureOptions = {}): CoreFixture {
  const dir = mkdtempSync('/tmp/airlock-core-');
  const driver = new FakeDriver();
  const drivers = new SandboxDrivers([driver, ...(options.extraDrivers ?? [])]);
  const store = options.store ?? new SqliteStore(join(dir, 'airlock.db'));
  const artifacts = new SnapshotDirectory(join(dir, 'snapshots'));
  const disks = new DirectoryDisks(join(dir, 'disks'));
  const images = new StaticImages();
  const auditKey = options.auditKey ?? randomBytes(32);
  const audit = new AuditLog({ key: auditKey, clock: systemClock });
  // the fake checkpoint writes nothing: give every snapshot one file so it can be sealed
  for (const each of drivers.all() as FakeDriver[]) {
    const realCheckpoint = each.checkpoint.bind(each);
    each.checkpoint = async (handle, imageDir, checkpointOptions) => {
      mkdirSync(imageDir, { recursive: true });
      writeFileSync(join(imageDir, 'checkpoint.img'), `memory of ${handle.sandboxId}`);
      return realCheckpoint(handle, imageDir, checkpointOptions);
    };
  }
  const authorizer = new ScriptedAuthorizer();
  const analyze = (input: { command?: string; argv?: string[] }): CommandAnalysis => {
    const words = input.command ? input.command.split(/[\s;&|]+/) : (input.argv ?? []);
    return { programs: [...new Set(words.filter(Boolean))].sort(), analysable: true, reasons: [] };
  };
  const clock = new ManualClock();
  const thumbnails = new MemoryThumbnails();
  const core = buildCoreServices({
    store,
    audit,
    drivers,
    disks,
    images,
    artifacts,
    thumbnails,
    takeoverFrameIntervalMs: 50,
    layout: { sandboxStateDir: (id) => join(dir, 'state', id) },
    authorizer,
    analyzeCommand: analyze,
    owner: options.owner ?? 'srv_test',
    lineageClock: clock,
    ...(options.maxBranches === undefined ? {} : { maxForkBranches: options.maxBranches }),
    ...(options.concurrency === undefined ? {} : { forkConcurrency: options.concurrency }),
    ...(options.warmPool === undefined ? {} : { warmPool: options.warmPool }),
  });
  return {
    dir,
    driver,
    drivers,
    store,
    audit,
    auditKey,
    records: core.records,
    disposal: core.disposal,
    core,
    disks,
    images,
    sessions: core.sessions,
    approvals: core.approvals,
    pipeline: core.pipeline,
    authorizer,
    artifacts,
    clock,
    snapshots: core.snapshots,
    forks: core.forks,
    desktop: core.desktop,
    thumbnails,
    contract: (extra = {}) => parseContract({ version: 1, ...extra }),
    async forceRecord(id, change) {
      return store.transaction(async (tx) => {
        const current = await tx.lockSession(id);
        if (!current) throw new Error(`no session ${id}`);
        const next = { ...current, ...change, version: current.version + 1 };
        if (!(await tx.replaceSession(next))) throw new Error('lost the compare-and-set');
        return next;
      });
    },
    reconcile() {
      return reconcileSessions({ store, audit, records: core.records, disposal: core.disposal, drivers, specs: core.specs, disks, artifacts });
    },
    async close() {
      await core.pool.close();
      await core.teardowns.drain();
      await core.takeovers.close();
      await core.approvals.close();
      await core.usage.drain();
      if (!options.store) await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
