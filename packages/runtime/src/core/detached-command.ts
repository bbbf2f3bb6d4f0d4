/**
 * `exec --detach`: a long-running process (a dev server, a database) started
 * on the session machine, answered at once with its pid (ExecRequest.detach).
 * The process gets its own session, so the call's timeout or abort, which
 * kill the call's process group, leave it alone; its output goes to a log
 * file in the machine's /tmp, which is saved with the machine when it is
 * suspended. A program that cannot be started fails the call.
 */

/** Directory inside the machine holding the logs of detached processes. */
export const DETACHED_LOG_DIR = '/tmp/airlock';
