/**
 * The real agent binary run as a plain host process for protocol tests:
 * `--connect SOCKET --root DIR`, so its file operations are confined to a
 * temp root and it changes nothing privileged on the host. Builds the agent
 * with `make` when it is not built yet.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgentConnection } from '../../src/drivers/agent/agent-connection.js';

/** packages/runtime, from dist/test/support or test/support. */
const RUNTIME = fileURLToPath(new URL(import.meta.url.includes('/dist/test/') ? '../../../' : '../../', import.meta.url));

/** The agent binary, built if needed. */
export function agentBinary(): string {
  const binary = join(RUNTIME, 'dist', 'agent', 'airlock-agent');
  if (!existsSync(binary)) execFileSync('make', ['-s', '-C', join(RUNTIME, 'agent')], { stdio: 'inherit' });
  return binary;
}

/** A running host agent and its host end. */
export interface HostAgent {
  /** the directory the agent's file operations are confined to */
  root: string;
  socketPath: string;
  process: ChildProcess;
  /** the first connection (after its hello) */
  connection: AgentConnection;
  /** the next connection the agent makes (after a park or a drop) */
  nextConnection(timeoutMs?: number): Promise<AgentConnection>;
  /** raw sockets the server accepted, for hostile tests that speak bytes themselves */
  rawSockets(): Socket[];
  /** with `raw`: the first socket, its hello unread */
  firstSocket: Socket | undefined;
  /** stops the agent and removes everything; checks nothing is left running */
  dispose(): Promise<void>;
}

/** Starts the agent on the host; `raw` leaves the first connection unopened (the test speaks bytes). */
export async function startHostAgent(options: { raw?: boolean } = {}): Promise<HostAgent> {
  const base = mkdtempSync(join(tmpdir(), 'airlock-agent-test-'));
  const root = join(base, 'root');
  await mkdir(root);
  const socketPath = join(base, 'agent.sock');
  const sockets: Socket[] = [];
  const waiting: ((socket: Socket) => void)[] = [];
  const server: Server = createServer((socket) => {
    sockets.push(socket);
    const waiter = waiting.shift();
    if (waiter) waiter(socket);
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  let accepted = 0;
  const nextSocket = (timeoutMs: number): Promise<Socket> =>
    new Promise((resolve, reject) => {
      if (sockets.length > accepted) {
        resolve(sockets[accepted++] as Socket);
        return;
      }
      const waiter = (socket: Socket): void => {
        clearTimeout(timer);
        accepted++;
        resolve(socket);
      };
      const timer = setTimeout(() => {
        waiting.splice(waiting.indexOf(waiter), 1);
        reject(new Error(`the agent did not connect within ${timeoutMs} ms`));
      }, timeoutMs);
      waiting.push(waiter);
    });
  const child = spawn(agentBinary(), ['--connect', socketPath, '--root', root], { stdio: ['ignore', 'inherit', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const nextConnection = async (timeoutMs = 5_000): Promise<AgentConnection> => AgentConnection.open(await nextSocket(timeoutMs), { label: 'host-agent', helloTimeoutMs: timeoutMs });
  const firstSocket = options.raw ? await nextSocket(5_000) : undefined;
  const connection = options.raw ? (undefined as unknown as AgentConnection) : await nextConnection();
  return {
    root,
    socketPath,
    process: child,
    connection,
    nextConnection,
    rawSockets: () => sockets,
    firstSocket,
    async dispose() {
      for (const socket of sockets) socket.destroy();
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(base, { recursive: true, force: true });
      if (/out of memory|Segmentation/i.test(stderr)) throw new Error(`the agent reported: ${stderr}`);
    },
  };
}
