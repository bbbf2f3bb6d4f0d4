/**
 * A QEMU Machine Protocol client over the VM's QMP Unix socket: JSON lines,
 * one command at a time, answers matched by id, events delivered to
 * listeners. QEMU closes the socket without an answer when it quits (the
 * `quit` command resolves on that close).
 */
import { connect, type Socket } from 'node:net';
import { AirlockError } from '../../core/errors.js';

/** A QMP event (`STOP`, `RESUME`, `SHUTDOWN`, `MIGRATION`, ...). */
export interface QmpEvent {
  event: string;
  data?: Record<string, unknown>;
}

interface Waiter {
  command: string;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/** One QMP session. */
export class QmpClient {
  private buffered = '';
  private nextId = 1;
  private readonly waiters = new Map<string, Waiter>();
  private readonly eventListeners = new Set<(event: QmpEvent) => void>();
  private closed = false;
  private readonly closeListeners: (() => void)[] = [];

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.receive(chunk));
    socket.on('error', () => this.end());
    socket.on('close', () => this.end());
  }

  /** Connects, reads the greeting and negotiates capabilities; retries while the socket is not there yet. */
  static async connect(path: string, timeoutMs = 10_000): Promise<QmpClient> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const socket = await new Promise<Socket>((resolve, reject) => {
          const candidate = connect(path);
          candidate.once('connect', () => {
            candidate.off('error', reject);
            resolve(candidate);
          });
          candidate.once('error', reject);
        });
        const client = new QmpClient(socket);
        await client.greeting(deadline);
        await client.execute('qmp_capabilities');
        return client;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if ((code !== 'ENOENT' && code !== 'ECONNREFUSED') || Date.now() > deadline) {
          throw new AirlockError('DRIVER_FAILED', `cannot talk to QEMU's monitor at ${path}: ${(error as Error).message}`, { cause: error });
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }

  /** Runs a command; resolves with its `return` value, rejects with QEMU's error description. */
  execute<T = unknown>(command: string, args?: Record<string, unknown>): Promise<T> {
    if (this.closed) return Promise.reject(new AirlockError('DRIVER_FAILED', `QEMU's monitor is closed (running ${command})`));
    const id = `airlock-${this.nextId++}`;
    return new Promise<T>((resolve, reject) => {
      this.waiters.set(id, { command, resolve: resolve as (value: unknown) => void, reject });
      this.socket.write(`${JSON.stringify({ execute: command, ...(args ? { arguments: args } : {}), id })}\n`);
    });
  }

  /** Asks QEMU to exit; resolves when it closed the socket. */
  async quit(): Promise<void> {
    if (this.closed) return;
    const gone = new Promise<void>((resolve) => this.socket.once('close', () => resolve()));
    await this.execute('quit').catch(() => undefined);
    await gone;
  }

  /** Waits for the first event that `accept` takes, or rejects after `timeoutMs`. */
  waitForEvent(accept: (event: QmpEvent) => boolean, timeoutMs: number): Promise<QmpEvent> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.eventListeners.delete(listener);
        reject(new AirlockError('DRIVER_FAILED', `QEMU sent no expected event within ${timeoutMs} ms`));
      }, timeoutMs);
      const listener = (event: QmpEvent): void => {
        if (!accept(event)) return;
        clearTimeout(timer);
        this.eventListeners.delete(listener);
        resolve(event);
      };
      this.eventListeners.add(listener);
    });
  }

  /** Calls `listener` once when the session ends (at once if it has). */
  onClose(listener: () => void): void {
    if (this.closed) listener();
    else this.closeListeners.push(listener);
  }

  /** Closes the session (QEMU keeps running). */
  close(): void {
    this.socket.destroy();
  }

  private greeting(deadline: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new AirlockError('DRIVER_FAILED', 'QEMU sent no QMP greeting')), Math.max(1, deadline - Date.now()));
      this.waiters.set('greeting', {
        command: 'greeting',
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
    });
  }

  private receive(chunk: string): void {
    this.buffered += chunk;
    for (let newline = this.buffered.indexOf('\n'); newline >= 0; newline = this.buffered.indexOf('\n')) {
      const line = this.buffered.slice(0, newline).trim();
      this.buffered = this.buffered.slice(newline + 1);
      if (line) this.handle(JSON.parse(line) as Record<string, unknown>);
    }
  }

  private handle(message: Record<string, unknown>): void {
    if ('QMP' in message) {
      this.settle('greeting', undefined);
      return;
    }
    if (typeof message['event'] === 'string') {
      const event: QmpEvent = { event: message['event'], ...(isRecord(message['data']) ? { data: message['data'] } : {}) };
      for (const listener of [...this.eventListeners]) listener(event);
      return;
    }
    const id = typeof message['id'] === 'string' ? message['id'] : undefined;
    if (!id) return;
    if ('error' in message) {
      const waiter = this.waiters.get(id);
      this.waiters.delete(id);
      const description = isRecord(message['error']) ? String(message['error']['desc'] ?? 'unknown error') : 'unknown error';
      waiter?.reject(new AirlockError('DRIVER_FAILED', `QEMU refused ${waiter.command}: ${description}`));
      return;
    }
    this.settle(id, message['return']);
  }

  private settle(id: string, value: unknown): void {
    const waiter = this.waiters.get(id);
    this.waiters.delete(id);
    waiter?.resolve(value);
  }

  private end(): void {
    if (this.closed) return;
    this.closed = true;
    for (const waiter of this.waiters.values()) waiter.reject(new AirlockError('DRIVER_FAILED', `QEMU's monitor closed while running ${waiter.command}`));
    this.waiters.clear();
    for (const listener of this.closeListeners.splice(0)) listener();
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
