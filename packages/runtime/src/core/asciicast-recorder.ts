/**
 * A terminal session written as asciicast v2 (the asciinema format): a JSON
 * header line, then one JSON array per event, `[seconds, "o" | "i" | "r",
 * data]`. Output and input are decoded as UTF-8 streams, so a character cut
 * between two chunks is written whole; bytes that are not UTF-8 become U+FFFD
 * (the format carries text). Bounded: past `maxBytes` the recording stops
 * and says so with a last output event, and `truncated` turns true.
 */
import type { RecordingSink } from './terminal-recordings.js';

/** Largest recording of one takeover by default: 16 MiB. */
export const DEFAULT_RECORDING_MAX_BYTES = 16 * 1024 * 1024;

/** What the header says about the recording. */
export interface AsciicastHeader {
  columns: number;
  rows: number;
  /** when the terminal opened */
  startedAt: Date;
  title: string;
  env: Record<string, string>;
}

/** Writes one terminal session to a sink as asciicast v2. */
export class AsciicastRecorder {
  private readonly begun = performance.now();
  private readonly outputText = new TextDecoder('utf-8');
  private readonly inputText = new TextDecoder('utf-8');
  private written = 0;
  private stopped = false;
  /** true when the recording reached its bound and stopped early */
  truncated = false;

  constructor(
    private readonly sink: RecordingSink,
    header: AsciicastHeader,
    private readonly maxBytes = DEFAULT_RECORDING_MAX_BYTES,
  ) {
    this.line({
      version: 2,
      width: header.columns,
      height: header.rows,
      timestamp: Math.floor(header.startedAt.getTime() / 1000),
      title: header.title,
      env: header.env,
    });
  }

  /** Bytes the terminal showed. */
  output(bytes: Uint8Array): void {
    this.event('o', this.outputText.decode(bytes, { stream: true }));
  }

  /** Bytes the person typed. */
  input(bytes: Uint8Array): void {
    this.event('i', this.inputText.decode(bytes, { stream: true }));
  }

  /** The terminal's new size. */
  resize(columns: number, rows: number): void {
    this.event('r', `${columns}x${rows}`);
  }

  /** Flushes what the decoders hold and closes the sink. */
  async finish(): Promise<{ bytes: number; sha256: string }> {
    this.event('o', this.outputText.decode());
    this.event('i', this.inputText.decode());
    this.stopped = true;
    return this.sink.close();
  }

  private event(kind: 'o' | 'i' | 'r', data: string): void {
    if (data.length === 0 || this.stopped) return;
    const seconds = Math.round(performance.now() - this.begun) / 1000;
    if (this.written + Buffer.byteLength(JSON.stringify([seconds, kind, data])) + 1 > this.maxBytes) {
      this.truncated = true;
      this.stopped = true;
      this.sink.append(`${JSON.stringify([seconds, 'o', `\r\n[airlock: the recording stopped at its bound of ${this.maxBytes} bytes]\r\n`])}\n`);
      return;
    }
    this.line([seconds, kind, data]);
  }

  private line(value: unknown): void {
    const text = `${JSON.stringify(value)}\n`;
    this.written += Buffer.byteLength(text);
    this.sink.append(text);
  }
}
