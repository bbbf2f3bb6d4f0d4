/**
 * The session state machine as a table: for each operation, the states (and
 * the pending operation) it may start from, and where it leads. Nothing else
 * decides a session's `state` or `pendingOperation`: `SessionRecords` applies
 * this table, and every other module asks it for a transition by name.
 *
 *   creating → running ⇄ paused ⇄ suspended → terminated, and failed;
 *   running/paused → degraded (the machine stopped answering) → restart → running
 *
 * Long operations are two steps, `begin-*` (recorded before the sandbox is
 * touched) and `finish-*` or `cancel-*`, so that a restart after a crash
 * finds what was half done in `pendingOperation`.
 */
import { AirlockError } from './errors.js';
import type { LifecycleOperation, SessionRecord, SessionState } from './session.js';

/** Every transition a session can take. */
export type SessionOperation =
  | 'start'
  | 'fail'
  | 'pause'
  | 'unpause'
  | 'begin-suspend'
  | 'finish-suspend'
  | 'cancel-suspend'
  | 'begin-resume'
  | 'finish-resume'
  | 'cancel-resume'
  | 'begin-terminate'
  | 'finish-terminate'
  | 'adopt-running'
  | 'adopt-paused'
  | 'settle-suspended'
  | 'degrade'
  | 'begin-restart'
  | 'finish-restart'
  | 'cancel-restart';

/** One row of the table. */
interface TransitionRule {
  from: readonly SessionState[];
  /** the pending operation required before: a name, none in flight, or anything */
  pending: LifecycleOperation | 'none' | 'any';
  /** the state after; `same` keeps it */
  to: SessionState | 'same';
  pendingAfter: LifecycleOperation | null;
  /** the word used in an error message ("cannot <verb> session …") */
  verb: string;
}

const LIVE: readonly SessionState[] = ['creating', 'running', 'paused', 'suspended', 'degraded', 'failed'];
/** What `restart` starts from: a machine that is there (answering or not), or one that died with its disk kept. */
const RESTARTABLE: readonly SessionState[] = ['running', 'paused', 'degraded', 'failed'];

/** The table. */
export const SESSION_TRANSITIONS: Readonly<Record<SessionOperation, TransitionRule>> = {
  start: { from: ['creating'], pending: 'create', to: 'running', pendingAfter: null, verb: 'start' },
  fail: { from: LIVE, pending: 'any', to: 'failed', pendingAfter: null, verb: 'fail' },
  pause: { from: ['running'], pending: 'none', to: 'paused', pendingAfter: null, verb: 'pause' },
  unpause: { from: ['paused'], pending: 'none', to: 'running', pendingAfter: null, verb: 'unpause' },
  'begin-suspend': { from: ['running', 'paused'], pending: 'none', to: 'same', pendingAfter: 'suspend', verb: 'suspend' },
  'finish-suspend': { from: ['running', 'paused'], pending: 'suspend', to: 'suspended', pendingAfter: null, verb: 'finish suspending' },
  'cancel-suspend': { from: ['running', 'paused'], pending: 'suspend', to: 'running', pendingAfter: null, verb: 'cancel the suspend of' },
  'begin-resume': { from: ['suspended'], pending: 'none', to: 'same', pendingAfter: 'resume', verb: 'resume' },
  'finish-resume': { from: ['suspended'], pending: 'resume', to: 'running', pendingAfter: null, verb: 'finish resuming' },
  'cancel-resume': { from: ['suspended'], pending: 'resume', to: 'suspended', pendingAfter: null, verb: 'cancel the resume of' },
  'begin-terminate': { from: LIVE, pending: 'any', to: 'same', pendingAfter: 'terminate', verb: 'terminate' },
  'finish-terminate': { from: LIVE, pending: 'terminate', to: 'terminated', pendingAfter: null, verb: 'finish terminating' },
  'adopt-running': { from: ['running', 'paused'], pending: 'any', to: 'running', pendingAfter: null, verb: 'adopt' },
  'adopt-paused': { from: ['running', 'paused'], pending: 'any', to: 'paused', pendingAfter: null, verb: 'adopt' },
  'settle-suspended': { from: ['suspended'], pending: 'any', to: 'suspended', pendingAfter: null, verb: 'settle' },
  degrade: { from: ['running', 'paused'], pending: 'none', to: 'degraded', pendingAfter: null, verb: 'mark degraded' },
  'begin-restart': { from: RESTARTABLE, pending: 'none', to: 'same', pendingAfter: 'restart', verb: 'restart' },
  'finish-restart': { from: RESTARTABLE, pending: 'restart', to: 'running', pendingAfter: null, verb: 'finish restarting' },
  'cancel-restart': { from: RESTARTABLE, pending: 'restart', to: 'same', pendingAfter: null, verb: 'cancel the restart of' },
};

const HINT: Partial<Record<SessionState, string>> = {
  terminated: 'it was terminated; create a new session',
  failed: 'it failed; read its failure with `airlock sessions get`, then restart or terminate it',
  degraded: 'its machine stopped answering; restart it with `airlock sessions restart` or terminate it',
  suspended: 'it is suspended; resume it first',
  running: 'it is already running',
  paused: 'it is paused; the next call wakes it',
  creating: 'it is still being created; retry in a moment',
};

/** True when `operation` may start from the session's state and pending operation. */
export function canTransition(session: Pick<SessionRecord, 'state' | 'pendingOperation'>, operation: SessionOperation): boolean {
  const rule = SESSION_TRANSITIONS[operation];
  if (!rule.from.includes(session.state)) return false;
  if (rule.pending === 'any') return true;
  if (rule.pending === 'none') return session.pendingOperation === null;
  return session.pendingOperation === rule.pending;
}

/** Throws INVALID_STATE (or SESSION_BUSY while another operation is in flight) unless the transition may start. */
export function assertTransition(session: Pick<SessionRecord, 'id' | 'state' | 'pendingOperation'>, operation: SessionOperation): void {
  if (canTransition(session, operation)) return;
  const rule = SESSION_TRANSITIONS[operation];
  if (rule.from.includes(session.state) && session.pendingOperation !== null && rule.pending === 'none') {
    throw new AirlockError(
      'SESSION_BUSY',
      `cannot ${rule.verb} session ${session.id}: it is in the middle of a ${session.pendingOperation}; retry in a moment`,
      {
        details: { sessionId: session.id, state: session.state, pendingOperation: session.pendingOperation, operation },
      },
    );
  }
  const why = rule.from.includes(session.state) ? `no ${String(rule.pending)} is in flight` : (HINT[session.state] ?? `it is ${session.state}`);
  throw new AirlockError('INVALID_STATE', `cannot ${rule.verb} session ${session.id}: ${why}`, {
    details: { sessionId: session.id, state: session.state, operation },
  });
}

/** The state and pending operation after `operation` (which must be allowed). */
export function stateAfter(
  session: Pick<SessionRecord, 'state'>,
  operation: SessionOperation,
): { state: SessionState; pendingOperation: LifecycleOperation | null } {
  const rule = SESSION_TRANSITIONS[operation];
  return { state: rule.to === 'same' ? session.state : rule.to, pendingOperation: rule.pendingAfter };
}
