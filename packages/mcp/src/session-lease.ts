/**
 * The session an MCP run works on: an existing one (`--session`), or one
 * created for the run (with `--contract`, or the server's default contract).
 * Only a session created for the run is terminated when the run ends, so
 * that pointing a client at someone's session never destroys it.
 */
import { AirlockApiError, Connection, Sandbox, type ConnectionOptions } from '@airlock/sdk';
import { SessionCalls } from './session-calls.js';

/** Which session to use. */
export interface SessionChoice {
  /** use this existing session */
  sessionId?: string;
  /** create a session with this contract (object, or JSON/YAML text) */
  contract?: unknown;
  /** keep a created session when the run ends */
  keep?: boolean;
}

/** A session held by one MCP run. */
export interface SessionLease {
  readonly sessionId: string;
  /** true when the run created the session */
  readonly created: boolean;
  readonly calls: SessionCalls;
  /** Ends the run's hold: terminates the session if the run created it (and `keep` was not set). */
  release(): Promise<void>;
}

/** Attaches to or creates the session of an MCP run. */
export async function leaseSession(connection: ConnectionOptions, choice: SessionChoice): Promise<SessionLease> {
  if (choice.sessionId !== undefined && choice.contract !== undefined) {
    throw new AirlockApiError('INVALID_REQUEST', 'give either a session id or a contract, not both: a contract applies only to a session created for this run', 400);
  }
  let sandbox: Sandbox;
  if (choice.sessionId !== undefined) {
    sandbox = await Sandbox.connect(choice.sessionId, connection);
    if (sandbox.info.state === 'terminated' || sandbox.info.state === 'failed') {
      throw new AirlockApiError('INVALID_STATE', `session ${sandbox.id} is ${sandbox.info.state}; create a new one (omit the session to have one created)`, 409);
    }
  } else {
    sandbox = await Sandbox.create({ ...connection, ...(choice.contract === undefined ? {} : { contract: choice.contract }) });
  }
  const created = choice.sessionId === undefined;
  let released = false;
  return {
    sessionId: sandbox.id,
    created,
    calls: new SessionCalls(new Connection(connection), sandbox.id),
    async release() {
      if (released || !created || choice.keep) return;
      released = true;
      try {
        await sandbox.kill();
      } catch (error) {
        // Already gone is fine: the lease only promises the session does not outlive the run.
        if (!(error instanceof AirlockApiError && (error.code === 'SESSION_NOT_FOUND' || error.code === 'INVALID_STATE'))) throw error;
      }
    },
  };
}
