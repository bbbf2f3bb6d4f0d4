/**
 * The composition root: the only file that wires adapters (gVisor, SQLite or
 * PostgreSQL, loop disks, local images, Cedar, the egress gateway, the audit
 * key and head file) to the core services and the HTTP API.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import {
  openDataDir,
  loadOrCreateToken,
  loadOrCreateNodeId,
  defaultCacheDir,
  recordedPostgresStore,
  recordPostgresStore,
  type DataDirLayout,
} from './data-dir.js';
import { SqliteStore } from './stores/sqlite/sqlite-store.js';
import { redactUrl } from './stores/postgres/postgres-store.js';
import { openStore } from './stores/open-store.js';
import { GvisorDriver } from './drivers/gvisor/index.js';
import { QemuMicrovmDriver } from './drivers/qemu/index.js';
import { SandboxDrivers } from './core/sandbox-drivers.js';
import type { SnapshotArtifacts } from './core/snapshot-artifacts.js';
import { parseObjectStorageUrl, type ObjectStorageLocation } from './objects/object-storage-url.js';
import { S3ObjectStore } from './objects/s3-object-store.js';
import { ObjectSnapshotArtifacts } from './objects/object-snapshot-artifacts.js';
import type { DiskImages } from './objects/disk-images.js';
import { LoopDisks } from './storage/loop-disks.js';
import { SnapshotDirectory } from './storage/snapshot-directory.js';
import { AuditHeadFile } from './storage/audit-head-file.js';
import { ThumbnailDirectory } from './storage/thumbnail-directory.js';
import { TerminalRecordingDirectory } from './storage/terminal-recording-directory.js';
import { loadOrCreateAuditKey } from './storage/audit-key-file.js';
import { LocalImageCatalog } from './images/local-image-catalog.js';
import { AuditLog } from './audit/audit-log.js';
import { keyId } from './audit/hash-chain.js';
import { buildCoreServices } from './core/core-services.js';
import { DEFAULT_IMAGE, resourcesOf } from './core/session-service.js';
import { reconcileSessions, type ReconcileReport } from './core/session-reconciler.js';
import { ConnectionApprovals } from './core/connection-approvals.js';
import { ContractUpdates } from './core/contract-updates.js';
import { IdleSleeper } from './core/idle-sleeper.js';
import { DEFAULT_MAX_FORK_BRANCHES } from './core/fork-service.js';
import { AirlockError, type ErrorCode } from './core/errors.js';
import { OutageReports } from './core/outage-reports.js';
import { systemClock } from './core/clock.js';
import type { Store } from './core/store.js';
import type { SandboxDriver } from './core/sandbox-driver.js';
import type { SessionDisks } from './core/session-disks.js';
import type { ImageCatalog } from './core/image-catalog.js';
import type { SessionContract } from './core/session-contract.js';
import type { ApprovalRecord } from './core/approval.js';
import { tracerOf, tracingPlan } from './telemetry/otel-tracer.js';
import { LifecycleSpans } from './telemetry/lifecycle-spans.js';
import { checkClusterOptions, checkNodeId, claimNodeId } from './cluster/cluster-options.js';
import type { NodeMembership } from './cluster/node-membership.js';
import { hostMembership } from './cluster/host-membership.js';
import { SessionRouting } from './cluster/session-routing.js';
import { ContractAuthorizer } from './policy/contract-authorizer.js';
import { invalidContract } from './policy/contract-issues.js';
import { analyzeCommand } from './policy/shell-analysis.js';
import { parseContract, parseContractText, DEFAULT_CONTRACT } from './policy/session-contract.js';
import { SecretStore } from './secrets/secret-store.js';
import { EgressGateway } from './egress/egress-gateway.js';
import { SessionEgress } from './egress/session-egress.js';
import { loadEgressConfig, readUpstreamCas, type EgressConfig } from './egress/egress-config.js';
import { buildHttpServer } from './api/http-server.js';
import { listFromEnvironment, normalizeAllowedOrigin, parseAllowedHost } from './api/origin-guard.js';
import type { AirlockServices } from './api/airlock-services.js';
import { tapAuditAppends } from './api/audit-tap.js';
import { ActivityFeed } from './api/activity-feed.js';
import { AirlockMetrics } from './telemetry/airlock-metrics.js';
import { WebhookOutbox } from './telemetry/webhook-outbox.js';
import { WebhookEndpoints } from './telemetry/webhook-endpoints.js';
import { listenForMetrics } from './telemetry/metrics-listener.js';
import { JsonLog, loggedError, type LogLevel } from './telemetry/json-log.js';
import { logActivity } from './telemetry/activity-log.js';
import { Authentication, installationTokens } from './api/authentication.js';
import { ApiTokens } from './core/api-tokens.js';
import { DEFAULT_TENANT } from './core/tenancy.js';
import { TenantSettings } from './core/tenant-settings.js';
import { TenantAdmission } from './core/tenant-admission.js';
import { ConsoleLogins } from './api/console-logins.js';
import { OpenByToken } from './api/open-by-token.js';
import { ConsoleAssets, defaultConsoleAssetsDir } from './api/console-assets.js';

/** What each outage code is about, in the server's messages. */
const DEPENDENCY_NAMES: Partial<Record<ErrorCode, string>> = { STORE_UNAVAILABLE: 'the store', OBJECT_STORAGE_UNAVAILABLE: 'object storage' };

/** The version of this Airlock. */
export const AIRLOCK_VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** Options of `airlock serve`. */
export interface ServeOptions {
  dataDir: string;
  host: string;
  port: number;
  /** overrides AIRLOCK_TOKEN and the stored token */
  token?: string;
  /** a postgres:// URL; default $AIRLOCK_STORE_URL, else SQLite in the data dir */
  storeUrl?: string;
  logger?: boolean;
  /** OTLP/HTTP traces URL (default: the OTEL_* variables, else AIRLOCK_OTLP_ENDPOINT; none: no tracing) */
  otlpEndpoint?: string;
  /** replaceable for tests: the only driver, instead of gvisor (default) and microvm */
  driver?: SandboxDriver;
  /** replaceable for tests: every driver, the first the default */
  drivers?: SandboxDriver[];
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
  /** JSON lines on stdout: requests, lifecycle events, errors (`--log-level`); default off here, `info` for `airlock serve` */
  logLevel?: LogLevel;
  /** label metrics with tenant names (`--metrics-tenants`); off by default */
  metricsTenants?: boolean;
  /** also serve `GET /metrics` without a token on this address (`--metrics-listen`), for a Prometheus that holds no token */
  metricsListen?: { host: string; port: number };
  /** this data dir's node id (`--node-id`); default: the one made at its first start */
  nodeId?: string;
  /** join a cluster: the address other nodes reach this one at, http://HOST:PORT (`--advertise`); needs a PostgreSQL store and `objects` */
  advertise?: string;
  /** origins whose web pages may call the server besides its own (`--allowed-origin`); $AIRLOCK_ALLOWED_ORIGINS adds more */
  allowedOrigins?: readonly string[];
  /** further names of the server for the Host header (`--allowed-host`); $AIRLOCK_ALLOWED_HOSTS adds more */
  allowedHosts?: readonly string[];
  /**
   * machines kept warm per class of session (`--warm-pool`; the CLI's default is 2), so a create only
   * claims one; default 0 here (none)
   */
  warmPool?: number;
}

/** A control plane that is listening. */
export interface RunningServer {
  url: string;
  token: string;
  tokenCreated: boolean;
  layout: DataDirLayout;
  /** this data dir's node id: the owner of the sessions it creates */
  nodeId: string;
  services: AirlockServices;
  reconciled: ReconcileReport;
  http: FastifyInstance;
  /** where `GET /metrics` answers without a token, when `metricsListen` was given */
  metricsUrl: string | undefined;
  /** the object-storage side of snapshots, when `objects` was given */
  objects: ObjectSnapshotArtifacts | undefined;
  /** this node's membership of a cluster, when `advertise` was given */
  membership: NodeMembership | undefined;
  /** logs a failure as the server logs its own (stderr and the JSON log), every time */
  report(what: string, error: unknown): void;
  close(): Promise<void>;
}

/** The local image catalog of a data dir. */
export function openImageCatalog(layout: DataDirLayout): LocalImageCatalog {
  return new LocalImageCatalog({ root: layout.images, cacheDir: defaultCacheDir() });
}

/**
 * The audit log of a data dir over `store`: its key (made on first use; the
 * chains already there are anchored then) must be the key the store's chains
 * were written with, or the server refuses to start rather than fork the chains.
 */
export async function openAuditLog(layout: DataDirLayout, store: Store): Promise<{ audit: AuditLog; anchor: AuditHeadFile }> {
  const { key, created } = loadOrCreateAuditKey(layout.auditKey);
  const expected = await store.getSetting('audit-key-id');
  if (expected !== undefined && expected !== keyId(key)) {
    throw new AirlockError(
      'INVALID_CONFIGURATION',
      `the audit chains in this store were written with audit key ${expected}, but ${layout.auditKey} holds key ${keyId(key)}; restore that key file, or point AIRLOCK_AUDIT_KEY_FILE at the key the other servers of this database use`,
    );
  }
  const anchor = new AuditHeadFile(layout.auditHeads);
  const audit = new AuditLog({ key, anchor, clock: systemClock });
  if (expected === undefined) await store.transaction((tx) => tx.setSetting('audit-key-id', keyId(key)));
  if (created) {
    // Chains written before the key existed: their heads are kept outside the database from now on.
    const sessions = await store.listAuditedSessions();
    audit.anchorExisting(await Promise.all(sessions.map(async (sessionId) => ({ sessionId, head: await store.auditHead(sessionId) }))));
  }
  return { audit, anchor };
}

/**
 * Refuses a store that does not hold this data dir's sessions: their disks
 * and snapshots would look like orphans to the reconciler. Sessions left in
 * the data dir's SQLite file must be copied to PostgreSQL first, and a data
 * dir whose sessions moved to PostgreSQL must keep being served from there.
 */
async function checkStoreOfDataDir(layout: DataDirLayout, store: Store, url: string | undefined): Promise<void> {
  const recorded = recordedPostgresStore(layout);
  if (store.kind === 'sqlite') {
    if (recorded) {
      throw new AirlockError(
        'INVALID_STATE',
        `the sessions of ${layout.root} live in PostgreSQL (${recorded}); start with \`airlock serve --store ${recorded}\` (or remove ${layout.storeFile} to start over on SQLite)`,
      );
    }
    return;
  }
  if (!url) return;
  if (existsSync(layout.database)) {
    const local = new SqliteStore(layout.database);
    try {
      const live = (await local.listSessions()).filter((session) => session.state !== 'terminated');
      const missing = [];
      for (const session of live) if (!(await store.getSession(session.id))) missing.push(session.id);
      if (missing.length > 0) {
        throw new AirlockError(
          'INVALID_STATE',
          `${layout.root} holds ${missing.length} live sessions in its SQLite store that are not in ${redactUrl(url)} (e.g. ${missing[0]}); copy them first with \`airlock store copy --data-dir ${layout.root} --to ${redactUrl(url)}\` (stop the server first)`,
        );
      }
    } finally {
      await local.close();
    }
  }
  if (!recorded) recordPostgresStore(layout, url);
}

/** Wires everything and starts listening. */
export async function startServer(options: ServeOptions): Promise<RunningServer> {
  // Checked before anything starts: a mistyped origin must not leave a server running that refuses its console.
  const allowedOrigins = [...(options.allowedOrigins ?? []), ...listFromEnvironment(process.env['AIRLOCK_ALLOWED_ORIGINS'])].map(normalizeAllowedOrigin);
  const allowedHosts = [...(options.allowedHosts ?? []), ...listFromEnvironment(process.env['AIRLOCK_ALLOWED_HOSTS'])];
  allowedHosts.forEach(parseAllowedHost);
  // So is a tracing configuration it cannot follow (OTEL_* variables); nothing set: no tracer, no cost.
  const tracing = tracingPlan(process.env, options.otlpEndpoint ? { endpoint: options.otlpEndpoint } : {});
  // Likewise a bad --objects, AWS environment or unreachable bucket is refused before the data dir is touched.
  const objectsUrl = options.objects ?? process.env['AIRLOCK_OBJECTS_URL'];
  const storeUrl = options.storeUrl ?? process.env['AIRLOCK_STORE_URL'];
  const cluster = checkClusterOptions({
    ...(options.advertise === undefined ? {} : { advertise: options.advertise }),
    storeKind: storeUrl ? 'postgres' : 'sqlite',
    ...(objectsUrl ? { objects: objectsUrl } : {}),
    ...(process.env['AIRLOCK_NODE_LEASE_SECONDS'] === undefined ? {} : { leaseSeconds: process.env['AIRLOCK_NODE_LEASE_SECONDS'] }),
  });
  if (options.nodeId !== undefined) checkNodeId(options.nodeId);
  const objectStore = objectsUrl ? await connectObjectStore(parseObjectStorageUrl(objectsUrl)) : undefined;
  const layout = openDataDir(options.dataDir);
  const { token, created } = loadOrCreateToken(layout, options.token ?? process.env['AIRLOCK_TOKEN']);
  if (options.nodeId !== undefined) claimNodeId(layout.nodeIdFile, options.nodeId);
  const nodeId = loadOrCreateNodeId(layout);
  const drivers = new SandboxDrivers(
    options.drivers ??
      (options.driver
        ? [options.driver]
        : [
            new GvisorDriver({ stateRoot: join(layout.root, 'runsc'), sandboxesDir: layout.sandboxes }),
            new QemuMicrovmDriver({ stateRoot: join(layout.root, 'microvm'), cacheDir: defaultCacheDir(), sandboxesDir: layout.sandboxes }),
          ]),
  );
  // The default driver must work; another one that does not is reported, and its sessions fail with the cause.
  await drivers.default.checkHost();
  for (const driver of drivers.all().slice(1)) {
    await driver.checkHost().catch((error: unknown) => {
      process.stderr.write(
        `airlock: the ${driver.name} sandbox driver is unavailable, sessions asking for it will fail: ${error instanceof Error ? error.message : String(error)}\n`,
      );
    });
  }
  const store = await openStore({ url: storeUrl, sqlitePath: layout.database });
  const opened = await checkStoreOfDataDir(layout, store, storeUrl)
    .then(() => openAuditLog(layout, store))
    .catch(async (error: unknown) => {
      await store.close();
      throw error;
    });
  const { audit, anchor } = opened;
  // Every audit record, once committed (by this server or another sharing the store), also feeds the console's live event streams.
  const activity = new ActivityFeed();
  const untap = tapAuditAppends(store, (record) => activity.publish({ kind: 'audit', record }));
  const log = new JsonLog(options.logLevel ?? 'off');
  const reportFailure = (what: string, error: unknown) => {
    process.stderr.write(`airlock: ${what} failed: ${error instanceof Error ? error.message : String(error)}\n`);
    log.write('error', 'server.error', { what, error: loggedError(error) });
  };
  // A dependency that does not answer (the store, the bucket) is told once when its outage starts and once when it ends;
  // meanwhile background work backs off and retries, and calls that need it answer 503.
  const outages = new OutageReports(
    {
      down: (code, what, error) => {
        process.stderr.write(
          `airlock: ${DEPENDENCY_NAMES[code] ?? code} is unavailable (first seen by ${what}): ${error instanceof Error ? error.message : String(error)}; calls that need it answer 503 ${code}, background work retries until it is back\n`,
        );
        log.write('error', 'dependency.down', { dependency: DEPENDENCY_NAMES[code] ?? code, code, what, error: loggedError(error) });
        watchRecovery(code);
      },
      up: (code, downForMs) => {
        process.stderr.write(`airlock: ${DEPENDENCY_NAMES[code] ?? code} answers again after ${Math.round(downForMs / 1000)} s\n`);
        log.write('info', 'dependency.up', { dependency: DEPENDENCY_NAMES[code] ?? code, code, downForMs });
      },
    },
    reportFailure,
  );
  const report = (what: string, error: unknown) => outages.report(what, error);
  // Probes a dependency that went down until it answers, then ends its outage (every loop resumes by itself anyway).
  const recoveryProbes: NodeJS.Timeout[] = [];
  const watchRecovery = (code: ErrorCode) => {
    const probe =
      code === 'STORE_UNAVAILABLE'
        ? () => store.getSetting('audit-key-id')
        : code === 'OBJECT_STORAGE_UNAVAILABLE'
          ? objectStore && (() => objectStore.check())
          : undefined;
    if (!probe) return;
    let probing = false;
    const timer = setInterval(() => {
      if (probing) return;
      probing = true;
      probe()
        .then(
          () => {
            clearInterval(timer);
            outages.recovered(code);
          },
          () => undefined,
        )
        .finally(() => (probing = false));
    }, 2000);
    timer.unref();
    recoveryProbes.push(timer);
  };

  const disks = options.disks ?? new LoopDisks({ root: layout.disks });
  const objects = objectStore
    ? openObjectStorage(objectStore, layout, disks, nodeId, (error) => report(`object storage ${objectStore.description}`, error))
    : undefined;
  const images = options.images ?? openImageCatalog(layout);
  const artifacts: SnapshotArtifacts = objects ?? new SnapshotDirectory(layout.snapshots);
  const thumbnails = new ThumbnailDirectory(layout.thumbnails);
  const authorizer = new ContractAuthorizer();
  // The first compilation pays for Cedar's start (~0.5 s, measured): at start-up, not in a session's first call.
  authorizer.prepare(DEFAULT_CONTRACT);
  // Egress: the gateway asks the core for policies, decisions and approvals; the core asks it for networks.
  const egressConfig = options.egress ?? loadEgressConfig();
  const secrets = new SecretStore({ dir: join(layout.root, 'secrets'), keyFile: process.env['AIRLOCK_SECRETS_KEY_FILE'] ?? join(layout.root, 'secrets.key') });
  let connectionApprovals: ConnectionApprovals | undefined;
  const gateway = new EgressGateway({
    policyOf: async (sessionId) => {
      const session = await store.getSession(sessionId);
      if (!session || session.state === 'terminated' || session.state === 'failed' || !session.contract.network) return undefined;
      return { network: session.contract.network, credentials: session.contract.credentials ?? [], contractVersion: session.contractVersion };
    },
    authorize: async (sessionId, host, port) => {
      const session = await store.getSession(sessionId);
      if (!session) return { allowed: false, reason: 'the session no longer exists', policyIds: [] };
      const decision = authorizer.authorizeConnection(session, host, port);
      if (!decision.enforced || decision.decision === 'allow') return { allowed: true, reason: decision.reason, policyIds: decision.policyIds };
      if (decision.decision === 'deny') return { allowed: false, reason: decision.reason, policyIds: decision.policyIds };
      connectionApprovals ??= new ConnectionApprovals(core.approvals, egressConfig.approvalTimeoutMs);
      return { ...(await connectionApprovals.resolve(sessionId, host, port, decision)), policyIds: decision.policyIds };
    },
    audit: (sessionId, type, data) => {
      audit.appendNow(store, { sessionId, type, data }).catch((error: unknown) => report(`audit of ${type} for ${sessionId}`, error));
    },
    secretValue: (name) => {
      try {
        return secrets.get(name);
      } catch {
        return undefined;
      }
    },
    ...(egressConfig.hosts ? { hosts: egressConfig.hosts } : {}),
    upstreamCa: readUpstreamCas(egressConfig),
  });
  const networks = new SessionEgress({ root: join(layout.root, 'egress'), gateway, ...(egressConfig.subnet ? { subnet: egressConfig.subnet } : {}) });

  const tracer = tracing ? tracerOf(tracing, { onError: (error) => report('trace export', error) }) : undefined;
  const core = buildCoreServices({
    store,
    audit,
    drivers,
    disks,
    images,
    artifacts,
    thumbnails,
    terminalRecordings: new TerminalRecordingDirectory(layout.terminalRecordings),
    layout: { sandboxStateDir: (sandboxId) => join(layout.sandboxes, sandboxId) },
    authorizer,
    analyzeCommand,
    owner: nodeId,
    sharedArtifacts: objects !== undefined,
    networks,
    tracer,
    maxForkBranches: options.maxForkBranches ?? (Number.parseInt(process.env['AIRLOCK_MAX_FORK_BRANCHES'] ?? '', 10) || DEFAULT_MAX_FORK_BRANCHES),
    onError: report,
    warmPool: {
      size: options.warmPool ?? 0,
      // The session a create without image or contract gets: the one most worth keeping warm.
      defaultClass: { imageName: DEFAULT_IMAGE, resources: resourcesOf(DEFAULT_CONTRACT), filesystem: DEFAULT_CONTRACT.filesystem },
    },
  });
  for (const change of ['requested', 'decided', 'settled'] as const) {
    core.approvals.events.on(change, (approval: ApprovalRecord) => activity.publish({ kind: 'approval', approval }));
  }
  // Lifecycle webhooks: the committed audit records, turned into deliveries in the store's outbox.
  const retryMs = Number.parseInt(process.env['AIRLOCK_WEBHOOK_RETRY_MS'] ?? '', 10);
  const outbox = new WebhookOutbox({
    store,
    nodeId,
    ...(retryMs > 0 ? { retryFirstMs: retryMs, pollMs: Math.min(1_000, retryMs) } : {}),
    onOutcome: (outcome) => metrics.recordWebhookAttempt(outcome),
  });
  const unhook = activity.subscribe((event) => (event.kind === 'audit' ? outbox.hear(event.record) : undefined));
  const metrics = new AirlockMetrics(
    // The membership is made further down; a scrape comes after the start.
    { store, warmPool: () => core.pool.status(), nodeLeaseMs: () => membership?.leaseMs, webhookEndpoints: () => outbox.endpointsByState() },
    { tenantLabels: options.metricsTenants ?? false },
  );
  const unlog = activity.subscribe((event) => logActivity(log, event));
  const unmeter = activity.subscribe((event) => (event.kind === 'audit' ? metrics.recordAudit(event.record) : metrics.recordApproval(event.approval)));
  const lifecycleSpans = tracer ? new LifecycleSpans(tracer) : undefined;
  const untrace = lifecycleSpans ? activity.subscribe((event) => event.kind === 'audit' && lifecycleSpans.recordAudit(event.record)) : () => undefined;
  // Sessions from before owners existed: an embedded store only ever had this data dir's.
  if (store.kind === 'sqlite') await core.records.claimUnowned();
  const reconciled = await reconcileSessions({ store, audit, records: core.records, disposal: core.disposal, drivers, specs: core.specs, disks, artifacts });
  // The leases of this node's sessions: from now on every write of them is fenced by their epoch.
  await core.records.holdOwned();
  await core.approvals.resumeAfterRestart();
  // What was committed but not yet turned into deliveries (a crash in between) is enqueued now.
  outbox.start().catch((error: unknown) => report('webhook catch-up', error));
  // A backstop for a decision whose notification never arrived.
  core.approvals.startSweeping(30_000);
  const live = (await store.listSessions({ owner: nodeId })).filter((session) => session.state !== 'terminated' && session.state !== 'failed');
  await networks.reconcile(live, async (session) => (await images.get(session.imageName)).rootfsDir);
  // After the reconciler: it removed what pools of an earlier life of this node left (no session owns it).
  core.pool.start();
  // What an earlier life of this node (or a dead one) left is collected now, not at the first tick.
  objects?.collectInBackground();
  objects?.startCollector(options.collectIntervalMs ?? (Number.parseInt(process.env['AIRLOCK_OBJECTS_COLLECT_SECONDS'] ?? '', 10) || 600) * 1000);
  const retention = core.snapshots.startRetentionSweeper(60_000, (error) => report('snapshot retention sweep', error));
  // A short tick: the pause depth is meant to follow idleness within a fraction of a second.
  const sleeper = new IdleSleeper(core.sessions, {
    tickMs: options.idleTickMs ?? 250,
    onError: (sessionId, error) => report(`idle sleep of ${sessionId}`, error),
    onTickError: (error) => report('the idle check', error),
  });
  sleeper.start();
  const checkCredentials = <T extends SessionContract>(contract: T): T => {
    const missing = (contract.credentials ?? []).flatMap((credential, index) =>
      // A secret not given to the session's tenant is reported exactly as a missing one.
      secrets.givenTo(credential.secret, contract.identity.tenant)
        ? []
        : [
            {
              path: `credentials[${index}].secret`,
              message: `no secret named ${credential.secret}; store it first with \`airlock secrets set ${credential.secret}\``,
            },
          ],
    );
    if (missing.length > 0) throw invalidContract(missing);
    return contract;
  };
  const membership = cluster
    ? await hostMembership({
        store,
        sessions: core.sessions,
        drivers,
        disks,
        clock: systemClock,
        nodeId,
        settings: cluster,
        airlockVersion: AIRLOCK_VERSION,
        ...(Number.parseInt(process.env['AIRLOCK_NODE_MAX_SESSIONS'] ?? '', 10) > 0
          ? { maxSessions: Number.parseInt(process.env['AIRLOCK_NODE_MAX_SESSIONS'] ?? '', 10) }
          : {}),
        log: (message) => process.stderr.write(`airlock: ${message}\n`),
      })
    : undefined;
  const tokens = new ApiTokens(store, audit, systemClock);
  const tenants = new TenantSettings(store, audit, systemClock);
  const tokenDirectory = installationTokens(token, tokens);
  const loginSeconds = options.consoleLoginSeconds ?? (Number.parseInt(process.env['AIRLOCK_CONSOLE_LOGIN_SECONDS'] ?? '', 10) || undefined);
  const logins = new ConsoleLogins(loginSeconds === undefined ? {} : { lifetimeSeconds: loginSeconds });
  // A revoked token (here or on another server) loses its sockets, streams and logins within a sweep.
  const openByToken = new OpenByToken({ isLive: (tokenId) => tokenDirectory.isLive(tokenId), onEnd: (tokenId) => logins.endAllOf(tokenId) });
  const services: AirlockServices = {
    tokens,
    webhooks: new WebhookEndpoints(store, audit, () => outbox.kick()),
    openByToken,
    tenants,
    admission: new TenantAdmission(store, (tenant) => tenants.quotasOf(tenant)),
    sessions: core.sessions,
    snapshots: core.snapshots,
    forks: core.forks,
    pool: core.pool,
    ports: core.ports,
    resizer: core.resizer,
    pipeline: core.pipeline,
    approvals: core.approvals,
    desktop: core.desktop,
    terminals: core.terminals,
    thumbnails,
    store,
    audit,
    images,
    // No baseDir: a contract sent over the API can never make the server read its own files.
    parseContract: (input, parseOptions = {}) => {
      const contract = typeof input === 'string' ? parseContractText(input, 'auto') : parseContract(input);
      const { tenant } = parseOptions;
      const owned =
        tenant !== undefined && contract.identity.tenant === DEFAULT_TENANT
          ? parseContract({ ...contract, identity: { ...contract.identity, tenant } })
          : contract;
      return checkCredentials(owned);
    },
    secrets,
    contracts: new ContractUpdates({ sessions: core.sessions, parseContract: (input) => parseContract(input), networks }),
    defaultContract: () => DEFAULT_CONTRACT,
    ...(membership ? { cluster: { membership, routing: new SessionRouting({ store, records: core.records, membership }) } } : {}),
  };
  const authentication = new Authentication(tokenDirectory, logins);
  const http = buildHttpServer(services, {
    token,
    version: AIRLOCK_VERSION,
    logger: options.logger ?? false,
    authentication,
    activity,
    metrics,
    log,
    console: ConsoleAssets.load(options.consoleDir ?? defaultConsoleAssetsDir()),
    listenHost: options.host,
    allowedOrigins,
    // Other nodes forward calls with the advertised name in the Host header.
    allowedHosts: cluster ? [...allowedHosts, new URL(cluster.address).host] : allowedHosts,
    e2bDataDir: layout.root,
  });
  await http.listen({ host: options.host, port: options.port });
  const metricsListener = options.metricsListen ? await listenForMetrics(metrics, options.metricsListen) : undefined;
  writeFileSync(layout.pidFile, `${process.pid}\n`);
  await membership?.join();
  const address = http.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const url = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
  return {
    url,
    token,
    tokenCreated: created,
    layout,
    nodeId,
    services,
    objects,
    membership,
    reconciled,
    http,
    metricsUrl: metricsListener?.url,
    report: reportFailure,
    async close() {
      // With the store down the node cannot record that it left (its lease runs out instead); the rest of the shutdown goes on.
      await membership?.leave().catch((error: unknown) => reportFailure('leaving the cluster', error));
      retention.stop();
      openByToken.stop();
      await sleeper.stop();
      for (const timer of recoveryProbes) clearInterval(timer);
      await core.takeovers.close();
      await core.terminals.close();
      await http.close();
      await metricsListener?.close();
      unmeter();
      untrace();
      unlog();
      // Warm machines belong to no session: nothing would adopt them at the next start.
      await core.pool.close();
      await core.teardowns.drain();
      untap();
      unhook();
      await outbox.close();
      await core.approvals.close();
      await core.usage.drain();
      await tracer?.shutdown();
      // Sandboxes keep running, with no way out until the next start reopens their gateways (fail closed).
      await gateway.closeAll();
      await objects?.close();
      for (const driver of drivers.all()) await driver.close?.();
      await store.close();
      anchor.close();
      rmSync(layout.pidFile, { force: true });
    },
  };
}

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
function openObjectStorage(
  store: S3ObjectStore,
  layout: DataDirLayout,
  disks: SessionDisks,
  nodeId: string,
  onError: (error: unknown) => void,
): ObjectSnapshotArtifacts {
  if (!isDiskImages(disks)) {
    store.close();
    throw new AirlockError(
      'INVALID_ARGUMENTS',
      '--objects needs session disks whose images can be read and written (the loop-mounted disks of `airlock serve`)',
    );
  }
  return new ObjectSnapshotArtifacts({
    local: new SnapshotDirectory(layout.snapshots),
    objects: store,
    disks,
    owner: nodeId,
    onError,
  });
}

function isDiskImages(disks: SessionDisks): disks is SessionDisks & DiskImages {
  const candidate = disks as Partial<DiskImages>;
  return typeof candidate.readImage === 'function' && typeof candidate.createFromImage === 'function' && typeof candidate.savedIn === 'function';
}
