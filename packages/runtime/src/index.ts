/** @airlock/runtime: the control plane, as a library (the CLI's `serve` and host commands use it). */
export { startServer, openImageCatalog, openAuditLog, AIRLOCK_VERSION, type ServeOptions, type RunningServer } from './server.js';
export { defaultDataDir, defaultCacheDir, openDataDir, readStoredToken, loadOrCreateToken, loadOrCreateNodeId, runningServerPid, recordPostgresStore, type DataDirLayout } from './data-dir.js';
export { AirlockError, ERROR_STATUS, isAirlockError, type ErrorCode } from './core/errors.js';
export { parseContract, parseContractText, DEFAULT_CONTRACT, type SessionContract } from './policy/session-contract.js';
export { SqliteStore } from './stores/sqlite/sqlite-store.js';
export { PostgresStore, redactUrl } from './stores/postgres/postgres-store.js';
export { openStore, isPostgresUrl } from './stores/open-store.js';
export { copyStore, type StoreCopyReport } from './stores/store-copy.js';
export type { Store } from './core/store.js';
export type { SessionRecord } from './core/session.js';
export type { SandboxDriver, SandboxSpec, SandboxHandle, ExecRequest, ExecOutcome } from './core/sandbox-driver.js';
export { decodePng, type ScreenPixels } from './core/screen-image.js';
export { isLogLevel, LOG_LEVELS, type LogLevel } from './telemetry/json-log.js';
