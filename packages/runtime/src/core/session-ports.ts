/**
 * Ports of a session machine made reachable through the server. Exposing a
 * port only records it (audited as `port.exposed`); each proxied connection
 * then runs as a call on the machine: it wakes a sleeping machine, counts as
 * activity, and holds the session's shared lock for its whole life, so the
 * machine never pauses or suspends under an open connection. Services keep
 * running across suspend and resume like any other process, so an exposed
 * port works again as soon as the next request wakes the machine.
 */
import type { Duplex } from 'node:stream';
import { AirlockError } from './errors.js';
import type { SessionService } from './session-service.js';
import type { SessionRecord } from './session.js';

/** Most ports one session may expose. */
export const MAX_EXPOSED_PORTS = 32;

/** Exposes, lists and connects to the ports of session machines. */
export class SessionPorts {
  constructor(private readonly sessions: SessionService) {}

  /** The exposed ports of a session, ascending. */
  async list(sessionId: string): Promise<number[]> {
    return [...((await this.sessions.get(sessionId)).exposedPorts ?? [])];
  }

  /** Makes `port` reachable through the server's proxy; idempotent. */
  async expose(sessionId: string, port: number): Promise<SessionRecord> {
    checkPort(port);
    requireMachineSession(await this.sessions.getOwned(sessionId));
    return this.sessions.records.update(
      sessionId,
      (fresh) => {
        const ports = fresh.exposedPorts ?? [];
        if (ports.includes(port)) return undefined;
        if (ports.length >= MAX_EXPOSED_PORTS) {
          throw new AirlockError('INVALID_ARGUMENTS', `session ${sessionId} already exposes ${MAX_EXPOSED_PORTS} ports; remove one with \`airlock ports rm\``, { details: { field: 'port' } });
        }
        return { exposedPorts: [...ports, port].sort((a, b) => a - b) };
      },
      { type: 'port.exposed', data: { port } },
    );
  }

  /** Makes `port` unreachable again; connections already open finish. */
  async unexpose(sessionId: string, port: number): Promise<SessionRecord> {
    checkPort(port);
    await this.sessions.getOwned(sessionId);
    return this.sessions.records.update(
      sessionId,
      (fresh) => {
        const ports = fresh.exposedPorts ?? [];
        if (!ports.includes(port)) {
          throw new AirlockError('NOT_FOUND', `port ${port} of session ${sessionId} is not exposed; list them with \`airlock ports ls ${sessionId}\``, { details: { port } });
        }
        return { exposedPorts: ports.filter((p) => p !== port) };
      },
      { type: 'port.unexposed', data: { port } },
    );
  }

  /**
   * Runs `work` with a stream to the exposed `port`, waking the machine first
   * if it sleeps. The stream is destroyed when `work` settles; `work` must
   * not return before it is done with the stream.
   */
  async forward<T>(sessionId: string, port: number, work: (socket: Duplex) => Promise<T>): Promise<{ result: T; resumeMs: number }> {
    checkPort(port);
    const session = await this.sessions.getOwned(sessionId);
    requireMachineSession(session);
    if (!(session.exposedPorts ?? []).includes(port)) {
      throw new AirlockError('INVALID_STATE', `port ${port} of session ${sessionId} is not exposed; run \`airlock ports expose ${sessionId} ${port}\` first`, {
        details: { sessionId, port },
      });
    }
    await this.sessions.usage.touch(sessionId);
    try {
      return await this.sessions.withMachine(
        sessionId,
        async (handle) => {
          const socket = await this.sessions.drivers.forHandle(handle).connect(handle, port);
          try {
            return await work(socket);
          } finally {
            socket.destroy();
          }
        },
        { reason: 'port' },
      );
    } finally {
      // idleness counts from the end of the connection, not its start
      await this.sessions.usage.touch(sessionId).catch(() => undefined);
    }
  }
}

function checkPort(port: number): void {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new AirlockError('INVALID_ARGUMENTS', `port must be a whole number from 1 to 65535 (got ${port})`, { details: { field: 'port' } });
  }
}

function requireMachineSession(session: SessionRecord): void {
  if (session.mode !== 'machine') {
    throw new AirlockError('INVALID_STATE', `session ${session.id} runs each call in a fresh sandbox, so nothing listens between calls; expose ports of a session created with --mode machine`, {
      details: { sessionId: session.id, mode: session.mode },
    });
  }
  if (session.state === 'terminated' || session.state === 'failed') {
    throw new AirlockError('INVALID_STATE', `session ${session.id} is ${session.state}; its ports cannot be reached`, { details: { sessionId: session.id, state: session.state } });
  }
}
