/** @airlock/sdk: the TypeScript client of Airlock. Browser-safe: it imports nothing from Node. */
export { Sandbox, type SandboxCreateOptions } from './sandbox.js';
export { Commands, type RunOptions } from './commands.js';
export { Files, callTool } from './files.js';
export { Approvals } from './approvals.js';
export { Connection, type ConnectionOptions } from './connection.js';
export {
  AirlockApiError,
  AirlockConnectionError,
  ApprovalDeniedError,
  ApprovalPendingError,
  GuardError,
  PolicyDeniedError,
  SessionNotFoundError,
  errorFromBody,
} from './errors.js';
export type {
  ApprovalInfo,
  AuditRecord,
  AuditVerification,
  CallTiming,
  CommandResult,
  FileInfo,
  PolicyDecision,
  SessionInfo,
  ToolCallOutcome,
} from './types.js';
