/**
 * How the driver learns when a command really started, to split a call's
 * time into start (sandbox boot or exec setup) and run. The in-sandbox
 * wrapper prints START_MARKER on stdout right before it hands over to the
 * command, so the marker is always the first bytes of stdout; the host strips
 * it from the stream and notes the time. Without the marker (the wrapper
 * itself failed), the output passes through untouched.
 */

/** Printed by the wrappers just before the command starts; never part of the command's output. */
export const START_MARKER = '\x1eairlock-started\x1e';

/** The marker as a shell `printf` format (octal escapes, so it survives quoting). */
export const START_MARKER_PRINTF = '\\036airlock-started\\036';

const MARKER = Buffer.from(START_MARKER);

/** Strips the marker from the head of a stdout stream and reports when it passed. */
export class StartMarkerFilter {
  private pending: Buffer = Buffer.alloc(0);
  private done = false;
  /** milliseconds from construction to the marker, once seen */
  startMs: number | undefined;
  private readonly created = performance.now();

  constructor(private readonly forward: ((chunk: Buffer) => void) | undefined) {}

  /** Feeds one chunk of the raw stdout. */
  push = (chunk: Buffer): void => {
    if (this.done) {
      this.forward?.(chunk);
      return;
    }
    const head = Buffer.concat([this.pending, chunk]);
    const compared = Math.min(head.length, MARKER.length);
    if (!head.subarray(0, compared).equals(MARKER.subarray(0, compared))) {
      this.finish(head);
      return;
    }
    if (head.length < MARKER.length) {
      this.pending = head;
      return;
    }
    this.startMs = Math.round(performance.now() - this.created);
    this.finish(head.subarray(MARKER.length));
  };

  /** Passes on whatever was held back (output that only looked like the marker's beginning). */
  flush(): void {
    if (!this.done) this.finish(this.pending);
  }

  private finish(rest: Buffer): void {
    this.done = true;
    this.pending = Buffer.alloc(0);
    if (rest.length > 0) this.forward?.(rest);
  }
}
