/**
 * `sandbox.pty`: a takeover terminal, a shell on a PTY inside the session's
 * machine over a WebSocket (`airlock.terminal.v1`, docs/console.md). While it
 * is open the agent's tool calls on the session wait (reason TAKEOVER); the
 * whole terminal session is recorded (asciicast v2) and linked from the
 * audit. Closing it hands the session back.
 */
import type { Connection, WebSocketLike } from './connection.js';
import { AirlockConnectionError, errorFromBody } from './errors.js';

/** The WebSocket subprotocol of the terminal. */
export const TERMINAL_PROTOCOL = 'airlock.terminal.v1';

/** Options of `pty.open`. */
export interface PtyOpenOptions {
  /** the terminal's size; default 24 × 80 */
  rows?: number;
  cols?: number;
  /** what the audit records as the program the takeover came through; default `sdk` */
  client?: string;
}

/** An open terminal. */
export interface PtyTerminal {
  /** Sends keystrokes (text is sent as UTF-8). */
  write(data: string | Uint8Array): void;
  /** Hears the terminal's output; returns a function that stops listening. */
  onData(listener: (bytes: Uint8Array) => void): () => void;
  resize(rows: number, cols: number): void;
  /** Hands the session back: the shell ends; settles when the socket closed. */
  close(): Promise<void>;
  /** The shell's exit code once it exits; rejects with the server's error when it refused or ended the terminal. */
  readonly exited: Promise<number>;
}

/** Terminals of one session. */
export class Pty {
  constructor(
    private readonly connection: Connection,
    private readonly sessionId: string,
  ) {}

  /** Opens a shell in the session's machine (waking it if it sleeps). */
  async open(options: PtyOpenOptions = {}): Promise<PtyTerminal> {
    const path = `/v1/sessions/${encodeURIComponent(this.sessionId)}/terminal`;
    // Asked first over HTTP: a refusal (no session, no PTY on this driver) comes back with its code and message.
    await this.connection.send('GET', path);
    const query = `?client=${encodeURIComponent(options.client ?? 'sdk')}`;
    const socket = this.connection.openSocket(`${path}${query}`, TERMINAL_PROTOCOL);
    socket.binaryType = 'arraybuffer';
    return new Promise<PtyTerminal>((resolve, reject) => {
      let opened = false;
      socket.onopen = () => {
        opened = true;
        socket.send(JSON.stringify({ type: 'resize', cols: options.cols ?? 80, rows: options.rows ?? 24 }));
        resolve(new SocketTerminal(socket));
      };
      socket.onerror = () => {
        if (!opened)
          reject(new AirlockConnectionError(`could not open the terminal of session ${this.sessionId}: the WebSocket to ${this.connection.url} failed`));
      };
      socket.onclose = (event) => {
        if (!opened) reject(new AirlockConnectionError(`the terminal of session ${this.sessionId} closed before it opened (${event.code} ${event.reason})`));
      };
    });
  }
}

/** A terminal over an open socket. */
class SocketTerminal implements PtyTerminal {
  readonly exited: Promise<number>;
  private readonly listeners = new Set<(bytes: Uint8Array) => void>();
  private readonly closed: Promise<void>;
  private readonly encoder = new TextEncoder();

  constructor(private readonly socket: WebSocketLike) {
    let exitCode: number | undefined;
    let failure: { code?: number | string; message?: string } | undefined;
    let settleClosed!: () => void;
    this.closed = new Promise((resolve) => (settleClosed = resolve));
    this.exited = new Promise<number>((resolve, reject) => {
      socket.onmessage = (event) => {
        if (typeof event.data !== 'string') {
          const bytes = toBytes(event.data);
          for (const listener of this.listeners) listener(bytes);
          return;
        }
        const control = JSON.parse(event.data) as { type?: string; code?: number | string; message?: string };
        if (control.type === 'exit') exitCode = Number(control.code);
        if (control.type === 'error') failure = control;
      };
      socket.onclose = (event) => {
        settleClosed();
        if (exitCode !== undefined) resolve(exitCode);
        // The server closes a refused terminal with 4000 + the HTTP status of its error.
        else if (failure) reject(errorFromBody(event.code >= 4000 && event.code < 5000 ? event.code - 4000 : 409, { error: failure }));
        else reject(new AirlockConnectionError(`the terminal closed without an exit code (${event.code}${event.reason ? ` ${event.reason}` : ''})`));
      };
    });
    // Nobody may be awaiting `exited` (a caller that only closes): its rejection is theirs to read, not an unhandled one.
    this.exited.catch(() => undefined);
  }

  write(data: string | Uint8Array): void {
    if (this.socket.readyState === 1) this.socket.send(typeof data === 'string' ? this.encoder.encode(data) : data);
  }

  onData(listener: (bytes: Uint8Array) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  resize(rows: number, cols: number): void {
    if (this.socket.readyState === 1) this.socket.send(JSON.stringify({ type: 'resize', cols, rows }));
  }

  async close(): Promise<void> {
    if (this.socket.readyState <= 1) this.socket.close(1000, 'handed back');
    await this.closed;
  }
}

function toBytes(data: unknown): Uint8Array {
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return new Uint8Array(0);
}
