/**
 * The core's services, built from the ports the composition root hands in
 * (store, drivers, disks, images, artifacts, authorizer…). This only connects
 * core objects to each other, each to the few it needs and none back to the
 * one that uses it; which adapters fill the ports is decided in server.ts
 * (and in tests).
 */
import type { AuditLog } from '../audit/audit-log.js';
import type { Authorizer } from './authorizer.js';
import { ApprovalService } from './approval-service.js';
import { systemClock, type Clock } from './clock.js';
import { ForkService } from './fork-service.js';
import type { ImageCatalog } from './image-catalog.js';
import { LifecycleHooks } from './lifecycle-hooks.js';
import { LineageTools } from './lineage-tools.js';
import { MachineHibernation } from './machine-hibernation.js';
import type { SandboxDrivers } from './sandbox-drivers.js';
import { SandboxSpecs, type SessionLayout } from './sandbox-specs.js';
import type { SessionDisks } from './session-disks.js';
import { SessionLocks } from './session-locks.js';
import type { SessionNetworks } from './session-networks.js';
import { SessionPorts } from './session-ports.js';
import { SessionRecords } from './session-records.js';
import { SessionResizer } from './session-resizer.js';
import { SessionService } from './session-service.js';
import type { SnapshotArtifacts } from './snapshot-artifacts.js';
import { SnapshotDisposal } from './snapshot-disposal.js';
import { SnapshotService } from './snapshot-service.js';
import type { Store } from './store.js';
import { ToolExecutor } from './tool-executor.js';
import { ToolPipeline, type CommandAnalysis } from './tool-pipeline.js';
import type { Tracer } from './tracer.js';
import { UsageMeter } from './usage-meter.js';
import { WarmPool, type WarmPoolOptions } from './warm-pool.js';
import { SandboxTeardowns } from './sandbox-teardowns.js';
import { DesktopTools } from './desktop-tools.js';
import { DesktopTakeovers } from './desktop-takeovers.js';
import type { ThumbnailStore } from './screen-thumbnails.js';
import { AirlockError } from './errors.js';
import { TerminalTakeovers } from './terminal-takeovers.js';
import type { TerminalRecordings } from './terminal-recordings.js';

/** The ports and settings the core is built from. */
export interface CorePorts {
  store: Store;
  audit: AuditLog;
  /** the sandbox drivers sessions may run on (the first is the default) */
  drivers: SandboxDrivers;
  disks: SessionDisks;
  images: ImageCatalog;
  artifacts: SnapshotArtifacts;
  /** screen thumbnails of desktop calls and takeover frames */
  thumbnails: ThumbnailStore;
  /** asciicast recordings of takeover terminals (absent: terminals are refused, NOT_AVAILABLE) */
  terminalRecordings?: TerminalRecordings;
  layout: SessionLayout;
  authorizer: Authorizer;
  analyzeCommand: (input: { command?: string; argv?: string[] }) => CommandAnalysis;
  /** the server (data dir) this process speaks for */
  owner: string;
  networks?: SessionNetworks | undefined;
  clock?: Clock;
  /** the clock of snapshots and forks (tests move it); default `clock` */
  lineageClock?: Clock;
  tracer?: Tracer | undefined;
  maxForkBranches?: number;
  forkConcurrency?: number;
  /** snapshots live in object storage: any server forks a named snapshot */
  sharedArtifacts?: boolean;
  /** between frames of a takeover recording; default 500 ms */
  takeoverFrameIntervalMs?: number;
  /** told about background work that failed (samples, approved calls) */
  onError?: (what: string, error: unknown) => void;
  /** machines kept warm per class (`--warm-pool`); absent or size 0: every machine starts cold */
  warmPool?: Pick<WarmPoolOptions, 'size' | 'defaultClass' | 'classIdleMs' | 'maxClasses' | 'retryMs'>;
}

/** The core's services. */
export interface CoreServices {
  records: SessionRecords;
  locks: SessionLocks;
  usage: UsageMeter;
  hooks: LifecycleHooks;
  disposal: SnapshotDisposal;
  specs: SandboxSpecs;
  sessions: SessionService;
  approvals: ApprovalService;
  snapshots: SnapshotService;
  forks: ForkService;
  executor: ToolExecutor;
  pipeline: ToolPipeline;
  desktop: DesktopTools;
  takeovers: DesktopTakeovers;
  /** takeover terminals: a shell in a session's machine, the session's calls held meanwhile */
  terminals: TerminalTakeovers;
  ports: SessionPorts;
  resizer: SessionResizer;
  /** warm machines new sessions claim; `start()` it once the reconciler has run */
  pool: WarmPool;
  /** sandboxes being destroyed in the background (old machines of suspended sessions) */
  teardowns: SandboxTeardowns;
}

/** Builds the core's services over `ports`. */
export function buildCoreServices(ports: CorePorts): CoreServices {
  const { store, audit, drivers, disks, images, artifacts } = ports;
  const clock = ports.clock ?? systemClock;
  const lineageClock = ports.lineageClock ?? clock;
  const records = new SessionRecords({ store, audit, clock, owner: ports.owner });
  const locks = new SessionLocks();
  const usage = new UsageMeter({ records, drivers, disks, locks, clock, onError: (sessionId, error) => ports.onError?.(`metering of ${sessionId}`, error) });
  const hooks = new LifecycleHooks({ drivers, store, audit });
  const specs = new SandboxSpecs({ drivers, disks, images, layout: ports.layout, networks: ports.networks });
  const disposal = new SnapshotDisposal({ store, audit, artifacts, clock: lineageClock });
  const teardowns = new SandboxTeardowns((what, error) => ports.onError?.(what, error));
  const hibernation = new MachineHibernation({
    store,
    records,
    drivers,
    disks,
    images,
    artifacts,
    specs,
    disposal,
    clock,
    networks: ports.networks,
    hooks,
    usage,
    teardowns,
  });
  const pool = new WarmPool({ drivers, disks, images, specs, onError: (what, error) => ports.onError?.(what, error) }, ports.warmPool ?? { size: 0 });
  const sessions = new SessionService({
    store,
    records,
    drivers,
    disks,
    images,
    specs,
    hibernation,
    disposal,
    usage,
    locks,
    hooks,
    networks: ports.networks,
    pool,
  });
  const approvals = new ApprovalService({
    store,
    audit,
    clock,
    isManagedHere: async (sessionId) => (await records.find(sessionId))?.owner === ports.owner,
    onError: (approvalId, error) => ports.onError?.(`approved call ${approvalId}`, error),
  });
  const snapshots = new SnapshotService({ store, audit, records, locks, drivers, disks, artifacts, disposal, clock: lineageClock });
  const forks = new ForkService({
    store,
    audit,
    records,
    locks,
    specs,
    drivers,
    disks,
    images,
    artifacts,
    snapshots,
    hooks,
    clock: lineageClock,
    ...(ports.maxForkBranches === undefined ? {} : { maxBranches: ports.maxForkBranches }),
    ...(ports.forkConcurrency === undefined ? {} : { concurrency: ports.forkConcurrency }),
    ...(ports.sharedArtifacts ? { sharedArtifacts: true } : {}),
  });
  const takeovers: DesktopTakeovers = new DesktopTakeovers({
    store,
    audit,
    frames: ports.thumbnails,
    capture: (sessionId) => desktop.capture(sessionId),
    clock,
    ...(ports.takeoverFrameIntervalMs === undefined ? {} : { frameIntervalMs: ports.takeoverFrameIntervalMs }),
  });
  const desktop: DesktopTools = new DesktopTools(sessions, ports.thumbnails, takeovers);
  const executor = new ToolExecutor(sessions, new LineageTools(snapshots, forks), desktop);
  const terminals = new TerminalTakeovers({ store, audit, sessions, recordings: ports.terminalRecordings ?? NO_RECORDINGS, clock });
  const pipeline = new ToolPipeline({
    store,
    audit,
    sessions,
    authorizer: ports.authorizer,
    analyzeCommand: ports.analyzeCommand,
    executor,
    approvals,
    desktop,
    terminals,
    clock,
    ...(ports.tracer ? { tracer: ports.tracer } : {}),
  });
  approvals.setExecutor((call, decision) => pipeline.runApproved(call, decision));
  return {
    records,
    locks,
    usage,
    hooks,
    disposal,
    specs,
    sessions,
    approvals,
    snapshots,
    forks,
    executor,
    pipeline,
    desktop,
    takeovers,
    terminals,
    ports: new SessionPorts(sessions),
    resizer: new SessionResizer(sessions),
    pool,
    teardowns,
  };
}

/** Where recordings go when the server keeps none: a terminal cannot be opened unrecorded. */
const NO_RECORDINGS: TerminalRecordings = {
  create: () =>
    Promise.reject(
      new AirlockError(
        'NOT_AVAILABLE',
        'this server keeps no terminal recordings, and a takeover terminal is never unrecorded; start the server with a data dir',
      ),
    ),
  get: () => Promise.resolve(undefined),
};
