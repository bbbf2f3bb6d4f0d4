/** @airlock/sdk: the TypeScript client of Airlock. Browser-safe: it imports nothing from Node. */
export { Sandbox, type SandboxCreateOptions } from './sandbox.js';
export { Commands, type RunOptions, type DetachedProcess } from './commands.js';
export { Files, callTool } from './files.js';
export { Approvals } from './approvals.js';
export { Audit } from './audit.js';
export { Secrets, updateSessionNetwork, type SecretInfo } from './secrets.js';
export { Snapshots } from './snapshots.js';
export { Tokens, Tenants, type TokenInfo, type TokenRole, type CreatedToken, type TenantInfo, type TenantQuotas } from './tokens.js';
export { Webhooks, type WebhookInfo, type CreatedWebhook, type WebhookTestResult } from './webhooks.js';
export { Ports, type ExposedPort } from './ports.js';
export { Desktop, type DesktopAction, type DesktopActionResult, type DesktopCallOptions, type Screenshot, type TakeoverInfo } from './desktop.js';
export { Connection, type ConnectionOptions, type WebSocketConstructor, type WebSocketLike } from './connection.js';
export { Pty, TERMINAL_PROTOCOL, type PtyOpenOptions, type PtyTerminal } from './pty.js';
export {
  AirlockApiError,
  AirlockConnectionError,
  ApprovalDeniedError,
  ApprovalPendingError,
  GuardError,
  PolicyDeniedError,
  SessionNotFoundError,
  errorFromBody,
  ForkError,
} from './errors.js';
export type {
  ApprovalInfo,
  AuditRecord,
  AuditReport,
  AuditVerification,
  CallTiming,
  CommandResult,
  FileInfo,
  ForkBranchFailure,
  ForkResult,
  PolicyDecision,
  SessionInfo,
  SnapshotInfo,
  ToolCallOutcome,
} from './types.js';
