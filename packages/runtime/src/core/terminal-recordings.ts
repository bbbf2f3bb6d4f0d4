/**
 * The port where takeover terminals keep their recordings (asciicast v2),
 * one file per takeover, per session. The audit record that ends a takeover
 * holds the recording's sha256 and size, so a kept recording can be checked
 * against the hash chain. Implemented on the host by
 * `TerminalRecordingDirectory`.
 */

/** Where one recording is being written. */
export interface RecordingSink {
  /** Appends text (one or more whole lines); writes are queued, in order. */
  append(text: string): void;
  /** Waits for every append to reach the disk and closes the file. */
  close(): Promise<{ bytes: number; sha256: string }>;
}

/** Keeps and serves recordings. */
export interface TerminalRecordings {
  /** A new recording of a takeover. */
  create(sessionId: string, takeoverId: string): Promise<RecordingSink>;
  /** The recording's bytes, or undefined when there is none of that name. */
  get(sessionId: string, takeoverId: string): Promise<Buffer | undefined>;
}
