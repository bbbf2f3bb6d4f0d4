/**
 * The core wired to the fake driver, a real SQLite store in a temp dir and
 * in-memory disks and images: for fast unit tests of sessions, snapshots,
 * forks and the pipeline. Snapshots and forks run on a clock the test moves.
 */
import { existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { FakeDriver } from '../../src/drivers/fake/fake-driver.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { SnapshotDirectory } from '../../src/storage/snapshot-directory.js';
import { SessionService } from '../../src/core/session-service.js';
import { ApprovalService } from '../../src/core/approval-service.js';
import { ToolPipeline, type CommandAnalysis } from '../../src/core/tool-pipeline.js';
import { ToolExecutor } from '../../src/core/tool-executor.js';
import { SnapshotService } from '../../src/core/snapshot-service.js';
import { ForkService } from '../../src/core/fork-service.js';
import { LineageTools } from '../../src/core/lineage-tools.js';
import type { Clock } from '../../src/core/clock.js';
import type { Authorizer, PolicyDecision, AuthorizationContext } from '../../src/core/authorizer.js';
import type { SessionDisks } from '../../src/core/session-disks.js';
import type { ImageCatalog, ImageRecord } from '../../src/images/image-catalog.js';
import { AirlockError } from '../../src/core/errors.js';
import { DesktopTools } from '../../src/core/desktop-tools.js';
import { DesktopTakeovers } from '../../src/core/desktop-takeovers.js';
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
  readonly image: ImageRecord = { name: 'test-image', digest: 'sha256:test', rootfsDir: '/nonexistent', source: 'oci-archive', sizeBytes: 0, createdAt: new Date(0).toISOString(), env: {} };
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
  driver: FakeDriver;
  store: SqliteStore;
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
  close(): void;
}

/** Builds a fresh fixture; `maxBranches` (of a fork) defaults to 64, `concurrency` (branches restored at once) to 4. */
export function coreFixture(options: { maxBranches?: number; concurrency?: number } = {}): CoreFixture {
  const dir = mkdtempSync('/tmp/airlock-core-');
  const driver = new FakeDriver();
  const store = new SqliteStore(join(dir, 'airlock.db'));
  const artifacts = new SnapshotDirectory(join(dir, 'snapshots'));
  const disks = new DirectoryDisks(join(dir, 'disks'));
  const images = new StaticImages();
  const sessions = new SessionService({
    store,
    driver,
    disks,
    images,
    artifacts,
    layout: { sandboxStateDir: (id) => join(dir, 'state', id) },
  });
  // the fake checkpoint writes nothing: give every snapshot one file so it can be sealed
  const realCheckpoint = driver.checkpoint.bind(driver);
  driver.checkpoint = async (handle, imageDir, options) => {
    mkdirSync(imageDir, { recursive: true });
    writeFileSync(join(imageDir, 'checkpoint.img'), `memory of ${handle.sandboxId}`);
    return realCheckpoint(handle, imageDir, options);
  };
  const approvals = new ApprovalService(store);
  const authorizer = new ScriptedAuthorizer();
  const analyze = (input: { command?: string; argv?: string[] }): CommandAnalysis => {
    const words = input.command ? input.command.split(/[\s;&|]+/) : (input.argv ?? []);
    return { programs: [...new Set(words.filter(Boolean))].sort(), analysable: true, reasons: [] };
  };
  const clock = new ManualClock();
  const snapshots = new SnapshotService({ store, driver, disks, artifacts, sessions, clock });
  const forks = new ForkService({
    store,
    driver,
    disks,
    images,
    artifacts,
    sessions,
    snapshots,
    hooks: sessions.hooks,
    clock,
    ...(options.maxBranches === undefined ? {} : { maxBranches: options.maxBranches }),
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
  });
  const thumbnails = new MemoryThumbnails();
  const takeovers: DesktopTakeovers = new DesktopTakeovers({ store, frames: thumbnails, capture: (sessionId) => desktop.capture(sessionId), clock, frameIntervalMs: 50 });
  const desktop: DesktopTools = new DesktopTools(sessions, driver, thumbnails, takeovers);
  const executor = new ToolExecutor(sessions, driver, new LineageTools(snapshots, forks), desktop);
  const pipeline = new ToolPipeline({ store, sessions, authorizer, analyzeCommand: analyze, executor, approvals, desktop });
  return {
    dir,
    driver,
    store,
    disks,
    images,
    sessions,
    approvals,
    pipeline,
    authorizer,
    artifacts,
    clock,
    snapshots,
    forks,
    desktop,
    thumbnails,
    contract: (extra = {}) => parseContract({ version: 1, ...extra }),
    close() {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
