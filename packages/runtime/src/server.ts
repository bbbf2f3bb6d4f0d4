/**
 * The composition root: the only file that wires adapters (gVisor, SQLite,
 * loop disks, local images, Cedar) to the core services and the HTTP API.
 */
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { openDataDir, loadOrCreateToken, defaultCacheDir, type DataDirLayout } from './data-dir.js';
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
import { ContractAuthorizer } from './policy/contract-authorizer.js';
import { analyzeCommand } from './policy/shell-analysis.js';
import { parseContract, DEFAULT_CONTRACT } from './policy/session-contract.js';
import { buildHttpServer } from './api/http-server.js';
import type { AirlockServices } from './api/airlock-services.js';
import type { SandboxDriver } from './core/sandbox-driver.js';
import type { SessionDisks } from './core/session-disks.js';
import type { ImageCatalog } from './images/image-catalog.js';
import { join } from 'node:path';

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
  /** replaceable for tests */
  driver?: SandboxDriver;
  disks?: SessionDisks;
  images?: ImageCatalog;
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
  close(): Promise<void>;
}

/** The local image catalog of a data dir. */
export function openImageCatalog(layout: DataDirLayout): LocalImageCatalog {
  return new LocalImageCatalog({ root: layout.images, cacheDir: defaultCacheDir() });
}

/** Wires everything and starts listening. */
export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const layout = openDataDir(options.dataDir);
  const { token, created } = loadOrCreateToken(layout, options.token ?? process.env['AIRLOCK_TOKEN']);
  const driver = options.driver ?? new GvisorDriver({ stateRoot: join(layout.root, 'runsc') });
  await driver.checkHost();
  const store = new SqliteStore(layout.database);
  const disks = options.disks ?? new LoopDisks({ root: layout.disks });
  const images = options.images ?? openImageCatalog(layout);
  const artifacts = new SnapshotDirectory(layout.snapshots);
  const sessions = new SessionService({
    store,
    driver,
    disks,
    images,
    artifacts,
    layout: { sandboxStateDir: (sandboxId) => join(layout.sandboxes, sandboxId) },
  });
  const approvals = new ApprovalService(store);
  const pipeline = new ToolPipeline({
    store,
    sessions,
    authorizer: new ContractAuthorizer(),
    analyzeCommand,
    executor: new ToolExecutor(sessions, driver),
    approvals,
  });
  const reconciled = await reconcileSessions({ store, driver, disks, artifacts, sessions });
  approvals.resumeAfterRestart();
  const services: AirlockServices = {
    sessions,
    pipeline,
    approvals,
    store,
    images,
    parseContract: (input) => parseContract(input),
    defaultContract: () => DEFAULT_CONTRACT,
  };
  const http = buildHttpServer(services, { token, version: AIRLOCK_VERSION, logger: options.logger ?? false });
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
    async close() {
      await http.close();
      await approvals.drain();
      store.close();
    },
  };
}
