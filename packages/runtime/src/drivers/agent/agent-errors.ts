/**
 * Translates the agent's ERROR answers (a Linux errno, a detail word, a
 * message) into AirlockErrors with a remedy. The agent's message is only
 * quoted; the code comes from the errno and the detail, never from its text.
 */
import { constants } from 'node:os';
import { AirlockError } from '../../core/errors.js';
import { PathLimit, Tag } from './agent-protocol.js';
import type { Fields } from './frame-codec.js';

/** What the failed request was about, for the message. */
export interface ErrorContext {
  /** e.g. "reading", "writing", "exec" */
  operation: string;
  path?: string;
}

const errno = constants.errno;

/** The agent's answer as an AirlockError. */
export function agentError(fields: Fields, context: ErrorContext): AirlockError {
  const number = fields.int(Tag.ERRNO, 0);
  const detail = fields.string(Tag.DETAIL, '', 64);
  const said = fields.string(Tag.MESSAGE, '', 1024);
  const where = context.path ?? '';
  const details = { ...(context.path === undefined ? {} : { path: context.path }), errno: number, ...(detail ? { detail } : {}) };
  switch (detail) {
    case 'symlink':
      return new AirlockError('FILE_CHANGED', `${where} changed while the call ran: a component became a symbolic link after the path was resolved; retry the call`, { details });
    case 'too-many-links':
      return new AirlockError('INVALID_ARGUMENTS', `${where} goes through more than ${PathLimit.SYMLINK_MAX_HOPS} symbolic links; resolve them first`, { details });
    case 'name-too-long':
      return new AirlockError('INVALID_ARGUMENTS', `a name in ${shortened(where)} is longer than ${PathLimit.NAME_MAX_BYTES} bytes; use a shorter name`, { details });
    case 'path-too-long':
      return new AirlockError('INVALID_ARGUMENTS', `${shortened(where)} is longer than ${PathLimit.MAX_BYTES} bytes (symbolic links included); use a shorter path`, { details });
    case 'too-many-components':
      return new AirlockError('INVALID_ARGUMENTS', `${shortened(where)} has more than ${PathLimit.MAX_COMPONENTS} components; use a shallower path`, { details });
    case 'not-absolute':
      return new AirlockError('INVALID_ARGUMENTS', `${where} is not an absolute path`, { details });
    case 'not-regular':
      return new AirlockError('INVALID_ARGUMENTS', `${where} is not a regular file (a device, fifo or socket); read it with a command instead`, { details });
    case 'too-deep':
      return new AirlockError('INVALID_ARGUMENTS', `${where} is nested deeper than ${PathLimit.REMOVE_MAX_DEPTH} levels; remove it with a command (rm -rf)`, { details });
    case 'root':
      return new AirlockError('INVALID_ARGUMENTS', `refusing to ${context.operation} the root directory; act on the entries inside it instead`, { details });
    default:
      break;
  }
  switch (number) {
    case errno.ENOENT:
      return new AirlockError('FILE_NOT_FOUND', `${where} does not exist in the session`, { details });
    case errno.EISDIR:
      return new AirlockError('IS_A_DIRECTORY', `${where} is a directory`, { details });
    case errno.ENOTDIR:
      return new AirlockError('NOT_A_DIRECTORY', `${where} (or one of its parents) is not a directory`, { details });
    case errno.EEXIST:
      return new AirlockError('FILE_EXISTS', `${where} exists and is not a directory`, { details });
    case errno.ENOTEMPTY:
      return new AirlockError('INVALID_STATE', `${where} is not empty (something kept writing into it); retry, or remove it with a command`, { details });
    case errno.ENOSPC:
    case errno.EDQUOT:
      return new AirlockError('DISK_FULL', `the session's disk is full ${context.operation} ${where}; remove files or create the session with a larger resources.diskMb`, { details });
    case errno.EACCES:
    case errno.EPERM:
    case errno.EROFS:
      return new AirlockError('FILE_ACCESS_DENIED', `the sandbox refused ${context.operation} ${where}: ${said || 'permission denied'} (read-only or not permitted inside the session)`, { details });
    case errno.ENAMETOOLONG:
    case errno.EINVAL:
    case errno.ELOOP:
      return new AirlockError('INVALID_ARGUMENTS', `${context.operation} ${shortened(where)} failed: ${said || 'invalid argument'}`, { details });
    case errno.EXDEV:
      return new AirlockError('INVALID_ARGUMENTS', `${where} and its target are on different mounts; copy, then remove`, { details });
    case errno.ECONNREFUSED:
      return new AirlockError('PORT_UNREACHABLE', `nothing listens on that port in the sandbox; start the service (e.g. \`airlock exec ID --detach -- CMD\`) and retry`, { details });
    case errno.EBUSY:
      return new AirlockError('SESSION_BUSY', `the sandbox is busy ${context.operation}: ${said}; wait for calls in flight to end and retry`, { details });
    case errno.EMFILE:
      return new AirlockError('SESSION_BUSY', `the sandbox has too many calls in flight; retry when some ended`, { details });
    default:
      return new AirlockError('DRIVER_FAILED', `${context.operation} ${where} failed in the sandbox: ${said || `errno ${number}`}`.replace(/\s+/g, ' '), { details });
  }
}

/** Long paths (4 KiB of "a/a/a…") are cut in messages; the details keep them whole. */
function shortened(path: string): string {
  return path.length > 120 ? `${path.slice(0, 100)}… (${path.length} bytes)` : path;
}
