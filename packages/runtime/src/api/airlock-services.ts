/** What the HTTP layer needs of the control plane: services only, never drivers or the store's internals. */
import type { SessionService } from '../core/session-service.js';
import type { ToolPipeline } from '../core/tool-pipeline.js';
import type { ApprovalService } from '../core/approval-service.js';
import type { Store } from '../core/store.js';
import type { ImageCatalog } from '../images/image-catalog.js';
import type { SessionContract } from '../policy/session-contract.js';

/** The services behind the API, wired by the composition root. */
export interface AirlockServices {
  sessions: SessionService;
  pipeline: ToolPipeline;
  approvals: ApprovalService;
  store: Store;
  images: ImageCatalog;
  /** Validates a contract (object or JSON/YAML text); throws INVALID_CONTRACT listing every error. */
  parseContract(input: unknown): SessionContract;
  /** The contract applied when a session is created without one. */
  defaultContract(): SessionContract;
}
