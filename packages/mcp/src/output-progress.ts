/**
 * A running command's output as MCP progress notifications, for a client
 * that sent a progress token: the new output goes in `message`, `progress`
 * counts the bytes of output so far (so it increases with every
 * notification, as the specification requires), and output is gathered for
 * `intervalMs` between notifications so that a chatty command does not flood
 * the client (and the stream's event store).
 */

/** The params of one `notifications/progress`, less the token. */
export interface OutputProgressUpdate {
  progress: number;
  message: string;
}

/** Options of the reporter. */
export interface OutputProgressOptions {
  /** sends one notification (the SDK's `sendNotification`, bound to the request) */
  send: (update: OutputProgressUpdate) => Promise<void>;
  /** least time between two notifications (default 250 ms) */
  intervalMs?: number;
  /** longest message; the start of longer output is cut (default 8,000 characters) */
  maxMessageChars?: number;
}

/** Gathers output and sends it as progress notifications until `finish`. */
export class OutputProgress {
  private pending = '';
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> = Promise.resolve();
  private finished = false;
  // One decoder for the whole output: a character split across two chunks stays whole.
  private readonly decoder = new TextDecoder();
  private readonly intervalMs: number;
  private readonly maxMessageChars: number;

  constructor(private readonly options: OutputProgressOptions) {
    this.intervalMs = options.intervalMs ?? 250;
    this.maxMessageChars = options.maxMessageChars ?? 8000;
  }

  /** Adds output of the command. */
  push(bytes: Uint8Array): void {
    if (this.finished || bytes.length === 0) return;
    this.bytes += bytes.length;
    this.pending += this.decoder.decode(bytes, { stream: true });
    this.timer ??= setTimeout(() => this.flush(), this.intervalMs);
  }

  /** Sends what is gathered, then sends nothing more (progress stops before the result). */
  async finish(): Promise<void> {
    if (this.finished) return this.sending;
    this.flush();
    this.finished = true;
    await this.sending;
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending === '') return;
    let message = this.pending;
    this.pending = '';
    if (message.length > this.maxMessageChars) {
      const cut = message.length - this.maxMessageChars;
      message = `[… ${cut} characters of output not shown]\n${message.slice(cut)}`;
    }
    const update = { progress: this.bytes, message };
    // In order, one at a time; a client that went away must not fail the command.
    this.sending = this.sending.then(() => this.options.send(update)).catch(() => undefined);
  }
}
