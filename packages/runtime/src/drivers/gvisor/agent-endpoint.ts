/**
 * The host end of one sandbox incarnation's agent channel: a Unix socket in
 * `<stateDir>/agent/`, a directory bind-mounted into the sandbox at
 * AGENT_HOST_DIR. The agent connects out to it (runsc `--host-uds=open`).
 *
 * Who may connect: the directory belongs to AGENT_SOCKET_OWNER with mode
 * 0700, a uid no process in the sandbox has or can take (no CAP_SETUID,
 * no-new-privileges), so only a process holding CAP_DAC_OVERRIDE reaches
 * the socket, and only the agent holds it (its children drop it). Which
 * sandbox a connection belongs to follows from the socket it arrived on;
 * at most one connection is served at a time.
 *
 * Around a checkpoint nothing may listen (a connected host socket makes
 * runsc's checkpoint panic), so the driver stops listening, removes the
 * socket file, and only then asks the agent to park.
 */
import { chown, mkdir, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';
import { AgentConnection } from '../agent/agent-connection.js';

/** The in-sandbox directory holding the host socket. */
export const AGENT_HOST_DIR = '/.airlock/host';
/** The in-sandbox path of the agent binary (bind-mounted read-only). */
export const AGENT_PATH = '/.airlock/bin/airlock-agent';
/** Owner of every socket directory: a uid no sandbox process has (see above). */
export const AGENT_SOCKET_OWNER = 2_147_483_646;
/** The socket's name inside the directory (short: sun_path holds 107 bytes). */
const SOCKET_NAME = 'agent.sock';
const MAX_SOCKET_PATH = 107;

/** The host directory of a sandbox's agent socket. */
export function agentDirectoryOf(stateDir: string): string {
  return join(stateDir, 'agent');
}

/** Makes the socket directory, owned so that only the agent can enter it. */
export async function prepareAgentDirectory(stateDir: string): Promise<string> {
  const directory = agentDirectoryOf(stateDir);
  const socketPath = join(directory, SOCKET_NAME);
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
    throw new AirlockError(
      'DRIVER_UNAVAILABLE',
      `the agent socket path ${socketPath} is longer than ${MAX_SOCKET_PATH} bytes, the limit of a Unix socket; use a shorter data directory (--data-dir)`,
    );
  }
  await mkdir(directory, { recursive: true, mode: 0o700 });
  await chown(directory, AGENT_SOCKET_OWNER, AGENT_SOCKET_OWNER);
  return directory;
}

/** The listener of one sandbox incarnation and the agent connected to it. */
export class AgentEndpoint {
  readonly socketPath: string;
  private server: Server | undefined;
  private connection: AgentConnection | undefined;
  private handshaking = false;
  private waiters: (() => void)[] = [];
  private closed = false;

  constructor(
    stateDir: string,
    /** names the sandbox in messages */
    readonly label: string,
  ) {
    this.socketPath = join(agentDirectoryOf(stateDir), SOCKET_NAME);
  }

  /** The live connection, if the agent is connected. */
  current(): AgentConnection | undefined {
    return this.connection?.open ? this.connection : undefined;
  }

  /** Starts listening (again); a stale socket file of an earlier listener is replaced. */
  async listen(): Promise<void> {
    if (this.server || this.closed) return;
    await rm(this.socketPath, { force: true });
    const server = createServer((socket) => this.accept(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', () => undefined);
  }

  /** Stops listening and removes the socket file, so that nothing in the sandbox can connect. */
  async stopListening(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    // Not waiting for close's callback: it comes only once the served connection ended too.
    server?.close();
    await rm(this.socketPath, { force: true });
  }

  /**
   * Waits until the agent is connected, calling `kick` (wake it: SIGUSR1)
   * after `kickAfterMs` and then every second. Undefined after `timeoutMs`.
   */
  async waitForAgent(timeoutMs: number, kick: () => Promise<void>, kickAfterMs = 100): Promise<AgentConnection | undefined> {
    const deadline = performance.now() + timeoutMs;
    let nextKick = performance.now() + kickAfterMs;
    for (;;) {
      const connection = this.current();
      if (connection || this.closed) return connection;
      const now = performance.now();
      if (now >= deadline) return undefined;
      if (now >= nextKick) {
        await kick().catch(() => undefined);
        nextKick = performance.now() + 1_000;
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, Math.min(nextKick, deadline) - now));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Closes the listener and the connection; the endpoint is done. */
  async close(): Promise<void> {
    this.closed = true;
    this.connection?.close('the sandbox is being destroyed');
    this.connection = undefined;
    await this.stopListening();
    this.wake();
  }

  private accept(socket: Socket): void {
    // One agent per sandbox: a second connection while one is served (or being greeted) is refused.
    if (this.closed || this.handshaking || this.current()) {
      socket.destroy();
      return;
    }
    this.handshaking = true;
    AgentConnection.open(socket, { label: this.label, helloTimeoutMs: 5_000 }).then(
      (connection) => {
        this.handshaking = false;
        if (this.closed) {
          connection.close();
          return;
        }
        this.connection = connection;
        void connection.ended.then(() => {
          if (this.connection === connection) this.connection = undefined;
        });
        this.wake();
      },
      () => {
        this.handshaking = false;
      },
    );
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
