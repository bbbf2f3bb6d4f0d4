/** What the HTTP layer needs of the control plane: services only, never drivers or the store's internals. */
import type { SessionService } from '../core/session-service.js';
import type { SessionPorts } from '../core/session-ports.js';
import type { SessionResizer } from '../core/session-resizer.js';
import type { ToolPipeline } from '../core/tool-pipeline.js';
import type { SnapshotService } from '../core/snapshot-service.js';
import type { WarmPool } from '../core/warm-pool.js';
import type { ForkService } from '../core/fork-service.js';
import type { ApprovalService } from '../core/approval-service.js';
import type { DesktopTools } from '../core/desktop-tools.js';
import type { TerminalTakeovers } from '../core/terminal-takeovers.js';
import type { ThumbnailStore } from '../core/screen-thumbnails.js';
import type { Store } from '../core/store.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { ImageCatalog } from '../core/image-catalog.js';
import type { ContractUpdates } from '../core/contract-updates.js';
import type { SecretStore } from '../secrets/secret-store.js';
import type { SessionContract } from '../core/session-contract.js';
import type { SessionRouting } from '../cluster/session-routing.js';
import type { NodeMembership } from '../cluster/node-membership.js';
import type { ApiTokens } from '../core/api-tokens.js';
import type { WebhookEndpoints } from '../telemetry/webhook-endpoints.js';
import type { TenantSettings } from '../core/tenant-settings.js';
import type { TenantAdmission } from '../core/tenant-admission.js';
import type { OpenByToken } from './open-by-token.js';

/** The services behind the API, wired by the composition root. */
export interface AirlockServices {
  sessions: SessionService;
  /** exposed ports of session machines and the proxy's connections to them */
  ports: SessionPorts;
  /** live resize of session machines */
  resizer: SessionResizer;
  /** snapshots as artifacts: create, list, remove, retention */
  snapshots: SnapshotService;
  /** fork of sessions and snapshots into branches */
  forks: ForkService;
  /** machines kept warm for new sessions */
  pool: WarmPool;
  pipeline: ToolPipeline;
  approvals: ApprovalService;
  /** screenshots, actions, the live view and takeovers of desktop sessions */
  desktop: DesktopTools;
  /** takeover terminals (a shell in a session's machine) and their recordings */
  terminals: TerminalTakeovers;
  /** screen thumbnails of desktop calls and takeover frames */
  thumbnails: ThumbnailStore;
  store: Store;
  /** the audit chains: verification and export */
  audit: AuditLog;
  images: ImageCatalog;
  /**
   * Validates a contract (object or JSON/YAML text); throws INVALID_CONTRACT listing every error.
   * With `tenant`, a contract that names no tenant gets that one (before its secrets are checked).
   */
  parseContract(input: unknown, options?: { tenant?: string }): SessionContract;
  /** secrets the egress gateway injects (absent: the server has none) */
  secrets?: SecretStore;
  /** changes to running sessions' contracts (the network section) */
  contracts?: ContractUpdates;
  /** API tokens with tenants and roles */
  tokens: ApiTokens;
  /** lifecycle webhook endpoints (absent: the server sends none) */
  webhooks?: WebhookEndpoints;
  /** per-tenant quotas */
  tenants: TenantSettings;
  /** per-tenant quotas at the door: sessions, calls in flight, forks */
  admission: TenantAdmission;
  /** what each token holds open (terminals, streams, MCP sessions...): a revoked token loses it all */
  openByToken: OpenByToken;
  /** The contract applied when a session is created without one. */
  defaultContract(): SessionContract;
  /** this node's membership of a cluster (`--advertise`): routing of session calls to the node holding them; absent: one node */
  cluster?: { membership: NodeMembership; routing: SessionRouting };
}
