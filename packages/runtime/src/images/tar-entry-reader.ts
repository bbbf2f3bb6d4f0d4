/**
 * Reads a tar stream entry by entry with the `tar` package's parser, and only
 * its parser: what to write where is decided by the callers (the archive
 * unpacker and the layer applier), which carry the safety checks.
 *
 * The parser is push-based and emits synchronously, so each input chunk is
 * parsed into a small queue of events that is then handed to the (async)
 * callbacks before the next chunk is read. Memory stays bounded by one chunk
 * and the callbacks see entries strictly in order.
 */
import { Parser, type ReadEntry } from 'tar';
import { imageProblem } from './image-errors.js';

/** The header fields of one tar entry that the image code relies on. */
export interface TarEntryHeader {
  /** the name as stored (pax and GNU long names already applied), not yet checked */
  path: string;
  /** the `tar` package's type name: File, OldFile, ContiguousFile, Directory, SymbolicLink, Link, CharacterDevice, BlockDevice, FIFO, ... */
  type: string;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtime: Date | undefined;
  linkpath: string | undefined;
}

/** Receives the body of an entry that the entry callback chose to read. */
export interface TarBodySink {
  write(chunk: Buffer): Promise<void>;
  /** the whole body was written */
  end(): Promise<void>;
  /** reading stopped early (bad archive, failed write); release what is held */
  abort(): Promise<void>;
}

type TarEvent = { kind: 'entry'; header: TarEntryHeader } | { kind: 'data'; chunk: Buffer } | { kind: 'end' };

const BLOCK = 512;

/**
 * Reads the tar archive in `source`, calling `onEntry` for every entry in order
 * and streaming bodies into the sinks it returns (undefined: skip the body).
 * Malformed input (not a tar, bad header checksum, truncated) rejects with
 * INVALID_IMAGE naming `label`.
 */
export async function readTarArchive(
  source: AsyncIterable<Buffer>,
  label: string,
  onEntry: (header: TarEntryHeader) => Promise<TarBodySink | undefined>,
): Promise<void> {
  const events: TarEvent[] = [];
  let failure: Error | undefined;
  let totalBytes = 0;
  // strict: every parser warning (bad checksum, truncation, unknown format) is an error
  const parser = new Parser({ strict: true, zstd: false, brotli: false });
  parser.on('entry', (entry: ReadEntry) => {
    events.push({ kind: 'entry', header: headerOf(entry) });
    entry.on('end', () => events.push({ kind: 'end' }));
    entry.on('data', (chunk: Buffer) => events.push({ kind: 'data', chunk }));
  });
  parser.on('error', (error: Error) => {
    failure ??= error;
  });

  let sink: TarBodySink | undefined;
  let inEntry = false;
  const deliver = async (): Promise<void> => {
    for (const event of events.splice(0)) {
      if (event.kind === 'entry') {
        inEntry = true;
        sink = await onEntry(event.header);
      } else if (event.kind === 'data') {
        if (sink !== undefined) await sink.write(event.chunk);
      } else {
        inEntry = false;
        const finished = sink;
        sink = undefined;
        if (finished !== undefined) await finished.end();
      }
    }
  };
  const malformed = (reason: string): Error =>
    imageProblem(`${label} is not a valid tar archive (${reason})`, { label });

  try {
    for await (const chunk of source) {
      totalBytes += chunk.length;
      parser.write(chunk);
      if (failure !== undefined) throw malformed(failure.message);
      await deliver();
    }
    parser.end();
    if (failure !== undefined) throw malformed(failure.message);
    // the parser cannot tell a header cut in half from the end of the input
    if (totalBytes % BLOCK !== 0) throw malformed(`truncated: ${totalBytes} bytes is not a whole number of 512-byte blocks`);
    await deliver();
    if (inEntry) throw malformed('truncated inside an entry');
  } catch (error) {
    const open = sink;
    sink = undefined;
    if (open !== undefined) await open.abort();
    throw error;
  }
}

function headerOf(entry: ReadEntry): TarEntryHeader {
  return {
    path: entry.path,
    type: entry.type,
    mode: (entry.mode ?? 0o644) & 0o7777,
    uid: entry.uid ?? 0,
    gid: entry.gid ?? 0,
    size: entry.size,
    mtime: entry.mtime,
    linkpath: entry.linkpath,
  };
}
