/**
 * The composition root: the only file that wires adapters (gVisor, SQLite,
 * loop disks, local images, Cedar) to the core services and the HTTP API.
 */
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { openDataDir, loadOrCreateToken, loadOrCreateNodeId, defaultCacheDir, type DataDirLayout } from './data-dir.js';
import { SqliteStore } from './stores/sqlite/sqlite-store.js';
import { GvisorDriver } from './drivers/gvisor/index.js';
import { LoopDisks } from './storage/loop-disks.js';
import { SnapshotDirectory } from './storage/snapshot-directory.js';
import { LocalImageCatalog } from './images/local-image-catalog.js';
import { SessionService } from './core/session-service.js';
import { reconcileSessions, type ReconcileReport } from './core/session-reconciler.js';
import { ApprovalService } from './core/approval-service.js';
import { ToolPipeline } from './core/tool-pipeline.js';
import { ToolExecutor } from './core/tool-executor.js';
import { LineageTools } from './core/lineage-tools.js';
import { DesktopTools } from './core/desktop-tools.js';
import { DesktopTakeovers } from './core/desktop-takeovers.js';
import { ThumbnailDirectory } from './storage/thumbnail-directory.js';
import { OtlpExporter } from './telemetry/otlp-exporter.js';
import { SnapshotService } from './core/snapshot-service.js';
import { ForkService, DEFAULT_MAX_FORK_BRANCHES } from './core/fork-service.js';
import { IdleSleeper } from './core/idle-sleeper.js';
import { SessionPorts } from './core/session-ports.js';
import { SessionResizer } from './core/session-resizer.js';
import { ContractAuthorizer } from './policy/contract-authorizer.js';
import { analyzeCommand } from './policy/shell-analysis.js';
import { parseContract, parseContractText, DEFAULT_CONTRACT } from './policy/session-contract.js';
import { buildHttpServer } from './api/http-server.js';
import { listFromEnvironment, normalizeAllowedOrigin, parseAllowedHost } from './api/origin-guard.js';
import type { AirlockServices } from './api/airlock-services.js';
import type { SandboxDriver } from './core/sandbox-driver.js';
import type { SessionDisks } from './core/session-disks.js';
import type { ImageCatalog } from './images/image-catalog.js';
import { wireEgress } from './egress/egress-wiring.js';
import type { EgressConfig } from './egress/egress-config.js';
import type { ApprovalRecord } from './core/approval.js';
import { ContractUpdates } from './core/contract-updates.js';
import type { SnapshotArtifacts } from './core/snapshot-artifacts.js';
import { AirlockError } from './core/errors.js';
import { parseObjectStorageUrl, type ObjectStorageLocation } from './objects/object-storage-url.js';
import { S3ObjectStore } from './objects/s3-object-store.js';
import { ObjectSnapshotArtifacts } from './objects/object-snapshot-artifacts.js';
import type { DiskImages } from './objects/disk-images.js';
import { join } from 'node:path';
import { tapAuditAppends } from './api/audit-tap.js';
import { ActivityFeed } from './api/activity-feed.js';
import { Authentication, installationTokens } from './api/authentication.js';
import { ConsoleLogins } from './api/console-logins.js';
import { ConsoleAssets, defaultConsoleAssetsDir } from './api/console-assets.js';

/** The version of this Airlock. */
export const AIRLOCK_VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** Options of `airlock serve`. */
export interface ServeOptions {
  dataDir: string;
  host: string;
  port: number;
  /** overrides AIRLOCK_TOKEN and the stored token */
  token?: string;
  logger?: boolean;
  /** OTLP/HTTP traces endpoint (default AIRLOCK_OTLP_ENDPOINT; none: no tracing) */
  otlpEndpoint?: string;
  /** replaceable for tests */
  driver?: SandboxDriver;
  disks?: SessionDisks;
  images?: ImageCatalog;
  /** largest fork; default $AIRLOCK_MAX_FORK_BRANCHES, else 64 */
  maxForkBranches?: number;
  /** how often the idle sleeper looks for machines to pause or suspend; default 250 ms */
  idleTickMs?: number;
  /** egress gateway settings; default: the file named by $AIRLOCK_EGRESS_CONFIG, if any */
  egress?: EgressConfig;
  /**
   * object storage for snapshots and suspended disks, `s3://BUCKET[/prefix]` (default
   * $AIRLOCK_OBJECTS_URL; endpoint, region and credentials from the AWS environment); none: this host only
   */
  objects?: string;
  /** how often unreferenced chunks are collected; default $AIRLOCK_OBJECTS_COLLECT_SECONDS, else 600 s */
  collectIntervalMs?: number;
  /** the built web console; default: packages/console/dist/web */
  consoleDir?: string;
  /** lifetime of a console login; default $AIRLOCK_CONSOLE_LOGIN_SECONDS, else 12 hours */
  consoleLoginSeconds?: number;
  /** origins whose web pages may call the server besides its own (`--allowed-origin`); $AIRLOCK_ALLOWED_ORIGINS adds more */
  allowedOrigins?: readonly string[];
  /** further names of the server for the Host header (`--allowed-host`); $AIRLOCK_ALLOWED_HOSTS adds more */
  allowedHosts?: readonly string[];
}

/** A control plane that is listening. */
export interface RunningServer {
  url: string;
  token: string;
  tokenCreated: boolean;
  layout: DataDirLayout;
  services: AirlockServices;
  reconciled: ReconcileReport;
  http: FastifyInstance;
  /** the object-storage side of snapshots, when `objects` was given */
  objects: ObjectSnapshotArtifacts | undefined;
  close(): Promise<void>;
}

/** The local image catalog of a data dir. */
export function openImageCatalog(layout: DataDirLayout): LocalImageCatalog {
  return new LocalImageCatalog({ root: layout.images, cacheDir: defaultCacheDir() });
}

/** Wires everything and starts listening. */
export async function startServer(options: ServeOptions): Promise<RunningServer> {
  // Checked before anything starts: a mistyped origin must not leave a server running that refuses its console.
  const allowedOrigins = [...(options.allowedOrigins ?? []), ...listFromEnvironment(process.env['AIRLOCK_ALLOWED_ORIGINS'])].map(normalizeAllowedOrigin);
  const allowedHosts = [...(options.allowedHosts ?? []), ...listFromEnvironment(process.env['AIRLOCK_ALLOWED_HOSTS'])];
  allowedHosts.forEach(parseAllowedHost);
  // Likewise a bad --objects, AWS environment or unreachable bucket is refused before the data dir is touched.
  const objectsUrl = options.objects ?? process.env['AIRLOCK_OBJECTS_URL'];
  const objectStore = objectsUrl ? await connectObjectStore(parseObjectStorageUrl(objectsUrl)) : undefined;
  const layout = openDataDir(options.dataDir);
  const { token, created } = loadOrCreateToken(layout, options.token ?? process.env['AIRLOCK_TOKEN']);
  const driver = options.driver ?? new GvisorDriver({ stateRoot: join(layout.root, 'runsc'), sandboxesDir: layout.sandboxes });
  await driver.checkHost();
  const disks = options.disks ?? new LoopDisks({ root: layout.disks });
  const objects = objectStore ? openObjectStorage(objectStore, layout, disks) : undefined;
  // Every audit record, once committed, also feeds the console's live event streams.
  const activity = new ActivityFeed();
  const store = tapAuditAppends(new SqliteStore(layout.database), (record) => activity.publish({ kind: 'audit', record }));
  const images = options.images ?? openImageCatalog(layout);
  const artifacts: SnapshotArtifacts = objects ?? new SnapshotDirectory(layout.snapshots);
  // Bound once the session service exists; the gateway only asks for it when a connection needs a human.
  let approvals: ApprovalService;
  const egress = wireEgress({ root: layout.root, store, approvals: () => approvals, ...(options.egress ? { config: options.egress } : {}) });
  const sessions = new SessionService({
    store,
    driver,
    disks,
    images,
    artifacts,
    layout: { sandboxStateDir: (sandboxId) => join(layout.sandboxes, sandboxId) },
    networks: egress.networks,
  });
  approvals = new ApprovalService(store);
  for (const change of ['requested', 'decided', 'settled'] as const) {
    approvals.events.on(change, (approval: ApprovalRecord) => activity.publish({ kind: 'approval', approval }));
  }
  const snapshots = new SnapshotService({ store, driver, disks, artifacts, sessions });
  const forks = new ForkService({
    store, driver, disks, images, artifacts, sessions, snapshots, hooks: sessions.hooks,
    maxBranches: options.maxForkBranches ?? (Number.parseInt(process.env['AIRLOCK_MAX_FORK_BRANCHES'] ?? '', 10) || DEFAULT_MAX_FORK_BRANCHES),
  });
  const otlpEndpoint = options.otlpEndpoint ?? process.env['AIRLOCK_OTLP_ENDPOINT'];
  const tracer = otlpEndpoint ? new OtlpExporter(otlpEndpoint) : undefined;
  const thumbnails = new ThumbnailDirectory(layout.thumbnails);
  const takeovers: DesktopTakeovers = new DesktopTakeovers({ store, frames: thumbnails, capture: (sessionId) => desktop.capture(sessionId) });
  const desktop: DesktopTools = new DesktopTools(sessions, driver, thumbnails, takeovers);
  const pipeline = new ToolPipeline({
    store,
    sessions,
    authorizer: new ContractAuthorizer(),
    analyzeCommand,
    executor: new ToolExecutor(sessions, driver, new LineageTools(snapshots, forks), desktop),
    approvals,
    desktop,
    ...(tracer ? { tracer } : {}),
  });
  const reconciled = await reconcileSessions({ store, driver, disks, artifacts, sessions });
  approvals.resumeAfterRestart();
  const live = store.listSessions().filter((session) => session.state !== 'terminated' && session.state !== 'failed');
  await egress.networks.reconcile(live, async (session) => (await images.get(session.imageName)).rootfsDir);
  // What an earlier life of this node (or a dead one) left is collected now, not at the first tick.
  objects?.collectInBackground();
  objects?.startCollector(options.collectIntervalMs ?? (Number.parseInt(process.env['AIRLOCK_OBJECTS_COLLECT_SECONDS'] ?? '', 10) || 600) * 1000);
  const retention = snapshots.startRetentionSweeper(60_000, (error) => process.stderr.write(`airlock: snapshot retention sweep failed: ${error instanceof Error ? error.message : String(error)}\n`));
  // A short tick: the pause depth is meant to follow idleness within a fraction of a second.
  const sleeper = new IdleSleeper(sessions, {
    tickMs: options.idleTickMs ?? 250,
    onError: (sessionId, error) => process.stderr.write(`airlock: idle sleep of ${sessionId} failed: ${error instanceof Error ? error.message : String(error)}\n`),
  });
  sleeper.start();
  const services: AirlockServices = {
    sessions,
    snapshots,
    forks,
    ports: new SessionPorts(sessions, driver),
    resizer: new SessionResizer(sessions, driver),
    pipeline,
    approvals,
    desktop,
    thumbnails,
    store,
    images,
    // No baseDir: a contract sent over the API can never make the server read its own files.
    parseContract: (input) => egress.checkCredentials(typeof input === 'string' ? parseContractText(input, 'auto') : parseContract(input)),
    secrets: egress.secrets,
    contracts: new ContractUpdates({ sessions, parseContract: (input) => parseContract(input), networks: egress.networks }),
    defaultContract: () => DEFAULT_CONTRACT,
  };
  const loginSeconds = options.consoleLoginSeconds ?? (Number.parseInt(process.env['AIRLOCK_CONSOLE_LOGIN_SECONDS'] ?? '', 10) || undefined);
  const authentication = new Authentication(installationTokens(token), new ConsoleLogins(loginSeconds === undefined ? {} : { lifetimeSeconds: loginSeconds }));
  const http = buildHttpServer(services, {
    token,
    version: AIRLOCK_VERSION,
    logger: options.logger ?? false,
    authentication,
    activity,
    console: ConsoleAssets.load(options.consoleDir ?? defaultConsoleAssetsDir()),
    listenHost: options.host,
    allowedOrigins,
    allowedHosts,
  });
  await http.listen({ host: options.host, port: options.port });
  const address = http.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const url = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
  return {
    url,
    token,
    tokenCreated: created,
    layout,
    services,
    reconciled,
    http,
    objects,
    async close() {
      retention.stop();
      await sleeper.stop();
      await takeovers.close();
      await http.close();
      await approvals.drain();
      await tracer?.flush();
      // Sandboxes keep running, with no way out until the next start reopens their gateways (fail closed).
      await egress.gateway.closeAll();
      await objects?.close();
      store.close();
    },
  };
}

/** Snapshot artifacts in object storage when asked for (checked reachable now, so a bad setting fails the start). */
/** The bucket, checked reachable now: a bad setting fails the start before anything is created. */
async function connectObjectStore(location: ObjectStorageLocation): Promise<S3ObjectStore> {
  const store = new S3ObjectStore(location);
  try {
    await store.check();
  } catch (error) {
    store.close();
    throw error;
  }
  return store;
}

/** Snapshot artifacts in object storage, the data dir's snapshot directory as their cache. */
function openObjectStorage(store: S3ObjectStore, layout: DataDirLayout, disks: SessionDisks): ObjectSnapshotArtifacts {
  if (!isDiskImages(disks)) {
    store.close();
    throw new AirlockError('INVALID_ARGUMENTS', '--objects needs session disks whose images can be read and written (the loop-mounted disks of `airlock serve`)');
  }
  return new ObjectSnapshotArtifacts({
    local: new SnapshotDirectory(layout.snapshots),
    objects: store,
    disks,
    owner: loadOrCreateNodeId(layout),
    onError: (error) => process.stderr.write(`airlock: object storage ${store.description}: ${error instanceof Error ? error.message : String(error)}\n`),
  });
}

function isDiskImages(disks: SessionDisks): disks is SessionDisks & DiskImages {
  const candidate = disks as Partial<DiskImages>;
  return typeof candidate.readImage === 'function' && typeof candidate.createFromImage === 'function' && typeof candidate.savedIn === 'function';
}
