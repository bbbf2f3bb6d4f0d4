/**
 * E2B's sandbox plane (what envd serves inside an E2B sandbox): the Connect
 * RPC services `process.Process` and `filesystem.Filesystem`, `/files` and
 * `/health`, under `/e2b` on Airlock's listener. The SDK names the sandbox in
 * the `E2b-Sandbox-Id` header and authenticates with `X-Access-Token` (the
 * caller's key). Every command and file operation is a tool call of the
 * session through the pipeline: policy, approvals, budgets, audit.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { posix } from 'node:path';
import { Code, ConnectError, createConnectRouter, createContextKey, type HandlerContext } from '@connectrpc/connect';
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from '@connectrpc/connect-node';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { AirlockServices } from '../airlock-services.js';
import { needs, PUBLIC_ROUTE } from '../access-rules.js';
import { identityOf, type Identity } from '../authentication.js';
import { AirlockError } from '../../core/errors.js';
import { EVERY_TENANT } from '../../core/tenancy.js';
import type { ToolCallOutcome } from '../../core/tool-pipeline.js';
import { Process, Signal, type ProcessConfig, type StartResponseSchema } from './generated/process/process_pb.js';
import { Filesystem, FileType, type EntryInfoSchema } from './generated/filesystem/filesystem_pb.js';
import { E2B_PREFIX } from './e2b-sandboxes.js';
import type { E2bSandboxes } from './e2b-control-routes.js';

/** Where relative paths of the SDK land (E2B's user home is /home/user; Airlock's working directory is /workspace). */
const HOME = '/workspace';

/** Longest a held command waits for its human before it ends as refused. */
const APPROVAL_WAIT_MS = 10 * 60_000;

/** Exit code of a command the airlock refused (as a shell's "cannot execute"). */
export const REFUSED_EXIT_CODE = 126;

interface CallContext {
  identity: Identity;
  sandboxId: string;
}
const CALLER = createContextKey<CallContext | undefined>(undefined);

type StartEvent = MessageInitShape<typeof StartResponseSchema>;

/** A process started through the E2B API, while it runs. */
interface RunningProcess {
  pid: number;
  config: ProcessConfig;
  tag?: string;
  abort: AbortController;
  /** events of the process so far, for Connect */
  events: StartEvent[];
  listeners: Set<(event: StartEvent | undefined) => void>;
  ended: boolean;
  /** settles once its call has returned */
  finished: Promise<void>;
  markFinished: () => void;
  /** input sent before its stdin was closed (a process started with stdin runs once it is) */
  stdin: Buffer[];
  stdinBytes: number;
  closeStdin: () => void;
  stdinClosed: Promise<void>;
  /** true while a process started with stdin waits for it to be closed */
  waitingForStdin: boolean;
}

/** Most input a process started with stdin may collect before it runs. */
const MAX_STDIN_BYTES = 16 * 1024 * 1024;

/** The processes started through the E2B API, per sandbox. */
class E2bProcesses {
  private nextPid = 1000;
  private readonly bySandbox = new Map<string, Map<number, RunningProcess>>();

  add(sandboxId: string, config: ProcessConfig, tag: string | undefined): RunningProcess {
    let markFinished = () => undefined as void;
    const finished = new Promise<void>((resolve) => (markFinished = resolve));
    let closeStdin = () => undefined as void;
    const stdinClosed = new Promise<void>((resolve) => (closeStdin = resolve));
    const process: RunningProcess = {
      pid: this.nextPid++,
      config,
      abort: new AbortController(),
      events: [],
      listeners: new Set(),
      ended: false,
      finished,
      markFinished,
      stdin: [],
      stdinBytes: 0,
      closeStdin,
      stdinClosed,
      waitingForStdin: false,
    };
    if (tag !== undefined) process.tag = tag;
    let processes = this.bySandbox.get(sandboxId);
    if (!processes) this.bySandbox.set(sandboxId, (processes = new Map()));
    processes.set(process.pid, process);
    return process;
  }

  emit(process: RunningProcess, event: StartEvent): void {
    process.events.push(event);
    for (const listener of process.listeners) listener(event);
  }

  end(sandboxId: string, process: RunningProcess): void {
    process.ended = true;
    process.markFinished();
    for (const listener of process.listeners) listener(undefined);
    this.bySandbox.get(sandboxId)?.delete(process.pid);
  }

  list(sandboxId: string): RunningProcess[] {
    return [...(this.bySandbox.get(sandboxId)?.values() ?? [])];
  }

  find(sandboxId: string, selector: { case: 'pid'; value: number } | { case: 'tag'; value: string } | { case: undefined; value?: undefined }): RunningProcess {
    const found = this.list(sandboxId).find((process) =>
      selector.case === 'pid' ? process.pid === selector.value : selector.case === 'tag' && process.tag === selector.value,
    );
    if (!found) throw new ConnectError(`process ${String(selector.value)} not found`, Code.NotFound);
    return found;
  }
}

/** Streams a process's events from `from` on, until it ends. */
async function* follow(process: RunningProcess, from = 0): AsyncGenerator<StartEvent> {
  const queue: (StartEvent | undefined)[] = process.events.slice(from);
  if (process.ended) queue.push(undefined);
  let wake: (() => void) | undefined;
  const listener = (event: StartEvent | undefined) => {
    queue.push(event);
    wake?.();
  };
  process.listeners.add(listener);
  try {
    for (;;) {
      while (queue.length > 0) {
        const event = queue.shift();
        if (event === undefined) return;
        yield event;
      }
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    process.listeners.delete(listener);
  }
}

function callerOf(context: HandlerContext): CallContext {
  const caller = context.values.get(CALLER);
  if (!caller) throw new ConnectError('missing sandbox', Code.Unauthenticated);
  return caller;
}

/** A path of the SDK as Airlock's tools take it. */
function absolute(path: string): string {
  return posix.resolve(HOME, path === '' ? '.' : path);
}

/** The shell command an E2B start request runs: the SDK's `/bin/bash -l -c CMD` runs as `bash -c CMD`. */
function execArgumentsOf(config: ProcessConfig): Record<string, unknown> {
  const args = [...config.args];
  const isBash = config.cmd === '/bin/bash' || config.cmd === 'bash' || config.cmd === '/bin/sh' || config.cmd === 'sh';
  const loginless = isBash ? args.filter((arg) => arg !== '-l' && arg !== '--login') : args;
  const shellCommand = isBash && loginless.length === 2 && loginless[0] === '-c' ? loginless[1] : undefined;
  const body: Record<string, unknown> = shellCommand !== undefined ? { command: shellCommand } : { argv: [config.cmd, ...args] };
  if (config.cwd !== undefined && config.cwd !== '') body['cwd'] = absolute(config.cwd);
  if (Object.keys(config.envs).length > 0) body['env'] = { ...config.envs };
  return body;
}

/** Maps an airlock refusal or a failure to a Connect error. */
function connectErrorOf(error: unknown): ConnectError {
  if (error instanceof ConnectError) return error;
  if (error instanceof AirlockError) {
    const code =
      error.status === 404
        ? Code.NotFound
        : error.status === 403
          ? Code.PermissionDenied
          : error.status === 400 || error.status === 422
            ? Code.InvalidArgument
            : error.status === 409
              ? Code.FailedPrecondition
              : error.status === 429
                ? Code.ResourceExhausted
                : Code.Internal;
    return new ConnectError(`${error.code}: ${error.message}`, code);
  }
  return new ConnectError(error instanceof Error ? error.message : String(error), Code.Internal);
}

/** The result of a file tool call, or the refusal as an error. */
function completed(outcome: ToolCallOutcome): Record<string, unknown> {
  if (outcome.status === 'completed') return outcome.result;
  if (outcome.status === 'pending-approval') {
    throw new ConnectError(
      `held for approval ${outcome.approvalId}: approve it with \`airlock approvals approve ${outcome.approvalId}\`, then retry`,
      Code.PermissionDenied,
    );
  }
  const status = outcome.error.code === 'FILE_NOT_FOUND' ? Code.NotFound : outcome.error.code === 'FILE_EXISTS' ? Code.AlreadyExists : Code.PermissionDenied;
  throw new ConnectError(`${outcome.error.code}: ${outcome.error.message}`, status);
}

interface FileInfoLike {
  name?: unknown;
  path?: unknown;
  type?: unknown;
  size?: unknown;
  mode?: unknown;
  modifiedAt?: unknown;
  target?: unknown;
}

function entryOf(info: FileInfoLike): MessageInitShape<typeof EntryInfoSchema> {
  const mode = typeof info.mode === 'string' ? Number.parseInt(info.mode, 8) : 0;
  const type = info.type === 'directory' ? FileType.DIRECTORY : info.type === 'symlink' ? FileType.SYMLINK : FileType.FILE;
  const entry: MessageInitShape<typeof EntryInfoSchema> = {
    name: String(info.name ?? ''),
    path: String(info.path ?? ''),
    type,
    size: BigInt(typeof info.size === 'number' ? info.size : 0),
    mode,
    permissions: permissionString(type, mode),
    owner: 'root',
    group: 'root',
    modifiedTime: timestampFromDate(new Date(typeof info.modifiedAt === 'string' ? info.modifiedAt : 0)),
  };
  if (typeof info.target === 'string') entry.symlinkTarget = info.target;
  return entry;
}

function permissionString(type: FileType, mode: number): string {
  const bits = 'rwxrwxrwx'.split('').map((letter, index) => ((mode >> (8 - index)) & 1 ? letter : '-'));
  return `${type === FileType.DIRECTORY ? 'd' : type === FileType.SYMLINK ? 'L' : '-'}${bits.join('')}`;
}

/** Registers the sandbox plane's routes. */
export function registerE2bSandboxRoutes(app: FastifyInstance, services: AirlockServices, sandboxes: E2bSandboxes): void {
  const processes = new E2bProcesses();
  sandboxes.stopCommands = async (sandboxId) => {
    const running = processes.list(sandboxId);
    for (const process of running) process.abort.abort();
    // Each ends once its call has let go of the machine (bounded: a stuck one does not hold the pause).
    await Promise.race([Promise.all(running.map((process) => process.finished)), new Promise((resolve) => setTimeout(resolve, 15_000).unref())]);
  };
  const submit = (sandboxId: string, tool: string, args: Record<string, unknown>, options: Parameters<AirlockServices['pipeline']['submit']>[3] = {}) =>
    services.pipeline.submit(sandboxId, tool, args, options);

  const router = createConnectRouter();
  router.service(Process, {
    async *start(request, context) {
      const { sandboxId } = callerOf(context);
      const config = request.process;
      if (!config) throw new ConnectError('process is required', Code.InvalidArgument);
      const process = processes.add(sandboxId, config, request.tag);
      const envVars = sandboxes.get(sandboxId)?.envVars ?? {};
      const args = execArgumentsOf(config);
      if (Object.keys(envVars).length > 0) args['env'] = { ...envVars, ...((args['env'] as Record<string, string> | undefined) ?? {}) };
      context.signal.addEventListener('abort', () => process.abort.abort(), { once: true });
      const say = (event: StartEvent) => processes.emit(process, event);
      const stderr = (text: string) => say({ event: { event: { case: 'data', value: { output: { case: 'stderr', value: Buffer.from(text) } } } } });
      const end = (exitCode: number, error?: string) =>
        say({
          event: { event: { case: 'end', value: { exitCode, exited: true, status: `exit status ${exitCode}`, ...(error === undefined ? {} : { error }) } } },
        });
      say({ event: { event: { case: 'start', value: { pid: process.pid } } } });
      const run = async () => {
        try {
          if (request.stdin === true) {
            process.waitingForStdin = true;
            // Airlock gives a command its whole input at its start: it runs once its stdin is closed.
            await Promise.race([process.stdinClosed, new Promise((resolve) => process.abort.signal.addEventListener('abort', resolve, { once: true }))]);
            if (process.abort.signal.aborted) throw new ConnectError('killed before its stdin was closed', Code.Aborted);
            process.waitingForStdin = false;
            args['stdin'] = Buffer.concat(process.stdin).toString('base64');
            args['stdinEncoding'] = 'base64';
          }
          let outcome = await submit(sandboxId, 'exec', args, {
            approvalWaitMs: 0,
            signal: process.abort.signal,
            onStdout: (chunk) => say({ event: { event: { case: 'data', value: { output: { case: 'stdout', value: chunk } } } } }),
            onStderr: (chunk) => say({ event: { event: { case: 'data', value: { output: { case: 'stderr', value: chunk } } } } }),
          });
          if (outcome.status === 'pending-approval') {
            stderr(`airlock: held for approval ${outcome.approvalId}; waiting for a decision (airlock approvals approve ${outcome.approvalId})\n`);
            outcome = await services.approvals.waitForOutcome(outcome.approvalId, APPROVAL_WAIT_MS, process.abort.signal);
            // The approved call ran without this stream: its output comes from its result.
            if (outcome.status === 'completed') {
              for (const stream of ['stdout', 'stderr'] as const) {
                const text = outcome.result[stream];
                if (typeof text !== 'string' || text === '') continue;
                const bytes = Buffer.from(text, outcome.result[`${stream}Encoding`] === 'base64' ? 'base64' : 'utf8');
                say({ event: { event: { case: 'data', value: { output: { case: stream, value: bytes } } } } });
              }
            }
          }
          if (outcome.status === 'completed') {
            const exitCode = typeof outcome.result['exitCode'] === 'number' ? outcome.result['exitCode'] : 1;
            end(exitCode, exitCode === 0 ? undefined : `exit status ${exitCode}`);
          } else if (outcome.status === 'refused') {
            stderr(`airlock: ${outcome.error.code}: ${outcome.error.message}\n`);
            end(REFUSED_EXIT_CODE, `${outcome.error.code}: ${outcome.error.message}`);
          } else {
            stderr(`airlock: still held for approval ${outcome.approvalId}\n`);
            end(REFUSED_EXIT_CODE, 'held for approval');
          }
        } catch (error) {
          const refused = connectErrorOf(error);
          stderr(`airlock: ${refused.rawMessage}\n`);
          end(process.abort.signal.aborted ? 137 : REFUSED_EXIT_CODE, refused.rawMessage);
        } finally {
          processes.end(sandboxId, process);
        }
      };
      void run();
      for await (const event of follow(process)) yield event;
    },
    async *connect(request, context) {
      const { sandboxId } = callerOf(context);
      const process = processes.find(sandboxId, request.process?.selector ?? { case: undefined });
      for await (const event of follow(process)) yield { event: event.event };
    },
    async list(_request, context) {
      const { sandboxId } = callerOf(context);
      return {
        processes: processes
          .list(sandboxId)
          .map((process) => ({ pid: process.pid, config: process.config, ...(process.tag === undefined ? {} : { tag: process.tag }) })),
      };
    },
    async sendSignal(request, context) {
      const { sandboxId } = callerOf(context);
      const process = processes.find(sandboxId, request.process?.selector ?? { case: undefined });
      if (request.signal === Signal.SIGKILL || request.signal === Signal.SIGTERM) process.abort.abort();
      return {};
    },
    async sendInput(request, context) {
      const { sandboxId } = callerOf(context);
      const process = processes.find(sandboxId, request.process?.selector ?? { case: undefined });
      const input = request.input?.input;
      if (input?.case !== 'stdin') throw new ConnectError('only stdin input is supported (no pty)', Code.Unimplemented);
      if (!process.waitingForStdin) {
        throw new ConnectError(
          'input to a command that is already running is not supported by Airlock: start it with stdin: true, send the input, then close stdin',
          Code.FailedPrecondition,
        );
      }
      if (process.stdinBytes + input.value.length > MAX_STDIN_BYTES)
        throw new ConnectError(`stdin holds at most ${MAX_STDIN_BYTES} bytes; pass larger input through a file`, Code.ResourceExhausted);
      process.stdin.push(Buffer.from(input.value));
      process.stdinBytes += input.value.length;
      return {};
    },
    async streamInput() {
      throw new ConnectError(
        'streamed input is not supported by Airlock: start the command with stdin: true, send the input, then close stdin',
        Code.Unimplemented,
      );
    },
    async closeStdin(request, context) {
      const { sandboxId } = callerOf(context);
      processes.find(sandboxId, request.process?.selector ?? { case: undefined }).closeStdin();
      return {};
    },
    async update() {
      throw new ConnectError('pty is not supported by Airlock yet', Code.Unimplemented);
    },
  });
  router.service(Filesystem, {
    async stat(request, context) {
      const { sandboxId } = callerOf(context);
      try {
        return { entry: entryOf(completed(await submit(sandboxId, 'files.stat', { path: absolute(request.path) }))) };
      } catch (error) {
        throw connectErrorOf(error);
      }
    },
    async makeDir(request, context) {
      const { sandboxId } = callerOf(context);
      try {
        const path = absolute(request.path);
        const existing = await submit(sandboxId, 'files.stat', { path }).catch((error: unknown) => {
          if (error instanceof AirlockError && error.code === 'FILE_NOT_FOUND') return undefined;
          throw error;
        });
        if (existing?.status === 'completed') throw new ConnectError(`${path} already exists`, Code.AlreadyExists);
        completed(await submit(sandboxId, 'files.mkdir', { path }));
        return { entry: entryOf(completed(await submit(sandboxId, 'files.stat', { path }))) };
      } catch (error) {
        throw connectErrorOf(error);
      }
    },
    async move(request, context) {
      const { sandboxId } = callerOf(context);
      try {
        const source = absolute(request.source);
        const destination = absolute(request.destination);
        const moved = completed(await submit(sandboxId, 'exec', { argv: ['mv', '--', source, destination] }));
        if (moved['exitCode'] !== 0) throw new ConnectError(`could not move ${source} to ${destination}`, Code.NotFound);
        return { entry: entryOf(completed(await submit(sandboxId, 'files.stat', { path: destination }))) };
      } catch (error) {
        throw connectErrorOf(error);
      }
    },
    async listDir(request, context) {
      const { sandboxId } = callerOf(context);
      try {
        const depth = Math.max(1, request.depth);
        const entries: MessageInitShape<typeof EntryInfoSchema>[] = [];
        const walk = async (path: string, level: number): Promise<void> => {
          const listed = completed(await submit(sandboxId, 'files.list', { path }));
          for (const info of (listed['entries'] as FileInfoLike[] | undefined) ?? []) {
            entries.push(entryOf(info));
            if (info.type === 'directory' && level < depth) await walk(String(info.path), level + 1);
          }
        };
        await walk(absolute(request.path), 1);
        return { entries };
      } catch (error) {
        throw connectErrorOf(error);
      }
    },
    async remove(request, context) {
      const { sandboxId } = callerOf(context);
      try {
        completed(await submit(sandboxId, 'files.remove', { path: absolute(request.path), recursive: true }));
        return {};
      } catch (error) {
        throw connectErrorOf(error);
      }
    },
    async *watchDir() {
      yield* [];
      throw new ConnectError('watching directories is not supported by Airlock yet', Code.Unimplemented);
    },
    async createWatcher() {
      throw new ConnectError('watching directories is not supported by Airlock yet', Code.Unimplemented);
    },
    async getWatcherEvents() {
      throw new ConnectError('watching directories is not supported by Airlock yet', Code.Unimplemented);
    },
    async removeWatcher() {
      throw new ConnectError('watching directories is not supported by Airlock yet', Code.Unimplemented);
    },
  });

  /** The sandbox a sandbox-plane request names, checked against the caller's tenant. */
  const sandboxOf = async (request: FastifyRequest): Promise<CallContext> => {
    const identity = identityOf(request);
    const header = request.headers['e2b-sandbox-id'];
    const sandboxId = typeof header === 'string' ? header : '';
    if (sandboxId === '')
      throw new AirlockError('INVALID_REQUEST', 'the E2b-Sandbox-Id header is required: set E2B_SANDBOX_URL to this server and use the e2b SDK');
    const session = await services.store.getSession(sandboxId);
    if (!session || (identity.tenant !== EVERY_TENANT && session.tenant !== identity.tenant) || session.state === 'terminated') {
      throw new AirlockError('SESSION_NOT_FOUND', `sandbox ${sandboxId} not found`);
    }
    return { identity, sandboxId };
  };

  void app.register(async (scope) => {
    // Connect reads its own bodies: nothing here parses them.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    for (const handler of router.handlers) {
      scope.post(`${E2B_PREFIX}${handler.requestPath}`, { config: { access: needs('tool.call') } }, async (request, reply) => {
        const caller = await sandboxOf(request);
        reply.hijack();
        const universal = universalRequestFromNodeRequest(request.raw, reply.raw, undefined, undefined);
        const contextValues = universal.contextValues;
        contextValues?.set(CALLER, caller);
        const response = await handler({ ...universal, contextValues: contextValues ?? createContextValuesWith(caller) });
        await universalResponseToNodeResponse(response, reply.raw);
      });
    }
    scope.get<{ Querystring: { path?: string } }>(`${E2B_PREFIX}/files`, { config: { access: needs('tool.call') } }, async (request, reply) => {
      const { sandboxId } = await sandboxOf(request);
      const path = absolute(request.query.path ?? '');
      const outcome = await submit(sandboxId, 'files.read', { path, encoding: 'base64', maxBytes: 64 * 1024 * 1024 });
      if (outcome.status !== 'completed') return refuseFile(reply, outcome);
      const content = Buffer.from(String(outcome.result['content'] ?? ''), 'base64');
      return reply
        .type('application/octet-stream')
        .header('content-disposition', `attachment; filename=${JSON.stringify(posix.basename(path))}`)
        .send(content);
    });
    scope.post<{ Querystring: { path?: string } }>(`${E2B_PREFIX}/files`, { config: { access: needs('tool.call') } }, async (request, reply) => {
      const { sandboxId } = await sandboxOf(request);
      const chunks: Buffer[] = [];
      for await (const chunk of request.raw) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      const contentType = String(request.headers['content-type'] ?? '');
      const files: { path: string; content: Buffer }[] = [];
      if (contentType.startsWith('multipart/form-data')) {
        const form = await new Request('http://e2b.invalid/files', { method: 'POST', headers: { 'content-type': contentType }, body }).formData();
        for (const [, value] of form.entries()) {
          if (typeof value === 'string') continue;
          const path = request.query.path ?? value.name;
          files.push({ path: absolute(path), content: Buffer.from(await value.arrayBuffer()) });
        }
      } else {
        files.push({ path: absolute(request.query.path ?? ''), content: body });
      }
      const written = [];
      for (const file of files) {
        const outcome = await submit(sandboxId, 'files.write', { path: file.path, content: file.content.toString('base64'), encoding: 'base64' });
        if (outcome.status !== 'completed') return refuseFile(reply, outcome);
        written.push({ name: posix.basename(file.path), type: 'file', path: file.path });
      }
      return written;
    });
    scope.get(`${E2B_PREFIX}/health`, { config: { access: PUBLIC_ROUTE } }, async (_request, reply) => reply.status(204).send());
  });
}

function createContextValuesWith(caller: CallContext) {
  // connect-node always gives context values; this is the fallback of its type.
  const values = new Map<symbol, unknown>();
  return {
    get: <T>(key: { id: symbol; defaultValue: T }) =>
      values.has(key.id) ? (values.get(key.id) as T) : key.id === CALLER.id ? (caller as T) : key.defaultValue,
    set: <T>(key: { id: symbol }, value: T) => {
      values.set(key.id, value);
      return undefined as never;
    },
    delete: (key: { id: symbol }) => {
      values.delete(key.id);
      return undefined as never;
    },
  };
}

function refuseFile(reply: import('fastify').FastifyReply, outcome: ToolCallOutcome) {
  if (outcome.status === 'pending-approval') {
    return reply
      .status(403)
      .send({ code: 403, message: `held for approval ${outcome.approvalId}: approve it with \`airlock approvals approve ${outcome.approvalId}\`, then retry` });
  }
  if (outcome.status === 'refused') {
    const status =
      outcome.error.code === 'FILE_NOT_FOUND' ? 404 : outcome.error.code === 'IS_A_DIRECTORY' || outcome.error.code === 'NOT_A_DIRECTORY' ? 400 : 403;
    return reply.status(status).send({ code: status, message: `${outcome.error.code}: ${outcome.error.message}` });
  }
  return reply.status(500).send({ code: 500, message: 'unexpected outcome' });
}
