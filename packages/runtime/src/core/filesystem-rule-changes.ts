/**
 * Why a running session's filesystem lists cannot change: the sandbox
 * enforces them with its own mounts, made when its machine starts, and a
 * suspended machine is restored only with the mounts it was checkpointed
 * with (gVisor restores the same mount set). A change applied to the files
 * API alone would make the two disagree, so it is refused with what to do.
 */
import { AirlockError } from './errors.js';
import type { FilesystemRules } from './session-contract.js';

/** The filesystem lists a session's mounts carry. */
export const FILESYSTEM_LISTS = ['readOnly', 'denyRead', 'denyWrite', 'allowWrite'] as const;

/** The lists (as `filesystem.<key>`) that differ between two normalized rule sets. */
export function changedFilesystemLists(current: FilesystemRules, next: FilesystemRules): string[] {
  const same = (a: readonly string[] | undefined, b: readonly string[] | undefined): boolean =>
    a === undefined || b === undefined ? a === b : a.length === b.length && [...a].sort().every((path, index) => path === [...b].sort()[index]);
  return FILESYSTEM_LISTS.filter((key) => !same(current[key], next[key])).map((key) => `filesystem.${key}`);
}

/** The refusal of a change of `lists` on session `sessionId`, saying what to do instead. */
export function filesystemChangeRefused(sessionId: string, lists: readonly string[]): AirlockError {
  return new AirlockError(
    'INVALID_STATE',
    `${lists.join(', ')} of session ${sessionId} cannot change while it exists: its machine enforces them with its own mounts, ` +
      'and a suspended machine resumes only with the mounts it was saved with. Create a new session with the new contract ' +
      "(copy what you need from this one's /workspace first); only network can change on a running session",
    { details: { sessionId, changed: [...lists] } },
  );
}
