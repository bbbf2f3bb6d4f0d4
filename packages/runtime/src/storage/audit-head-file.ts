/**
 * Chain heads kept outside the database: an append-only file of JSON lines
 * (`<data dir>/audit-heads.log`, 0600), one per committed head, each signed
 * with the audit key. Appending a line is one write(2) per transaction, no
 * fsync: a crash can only lose the last lines, which leaves the file behind
 * the database (verification reports the older head, never a false alarm),
 * and a torn last line is skipped on open. The file is compacted (written
 * beside, synced, renamed) when it holds many more lines than sessions.
 */
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { AuditAnchor } from '../audit/audit-log.js';
import type { SignedHead } from '../audit/hash-chain.js';

interface HeadLine {
  s: string;
  q: number;
  h: string;
  g: string;
}

const MIN_LINES_BEFORE_COMPACTION = 10_000;

/** The head file of a data dir. */
export class AuditHeadFile implements AuditAnchor {
  private readonly heads = new Map<string, SignedHead>();
  private fd: number;
  private lines = 0;

  constructor(private readonly path: string) {
    const torn = existsSync(path) ? this.load() : false;
    this.fd = openSync(path, 'a', 0o600);
    // A torn last line must not swallow the next one.
    if (torn) writeSync(this.fd, '\n');
    if (this.lines > MIN_LINES_BEFORE_COMPACTION && this.lines > 2 * this.heads.size) this.compact();
  }

  advance(heads: SignedHead[]): void {
    const fresh = heads.filter((head) => (this.heads.get(head.sessionId)?.seq ?? 0) < head.seq);
    if (fresh.length === 0) return;
    writeSync(this.fd, fresh.map((head) => `${JSON.stringify(toLine(head))}\n`).join(''));
    for (const head of fresh) this.heads.set(head.sessionId, head);
    this.lines += fresh.length;
    if (this.lines > MIN_LINES_BEFORE_COMPACTION && this.lines > 4 * this.heads.size) this.compact();
  }

  headOf(sessionId: string): SignedHead | undefined {
    return this.heads.get(sessionId);
  }

  chains(): string[] {
    return [...this.heads.keys()];
  }

  /** Closes the file. */
  close(): void {
    closeSync(this.fd);
  }

  /** Reads the heads; true when the file ends in a torn line. */
  private load(): boolean {
    const content = readFileSync(this.path, 'utf8');
    for (const text of content.split('\n')) {
      if (text === '') continue;
      this.lines += 1;
      let line: HeadLine;
      try {
        line = JSON.parse(text) as HeadLine;
      } catch {
        continue;
      }
      if (typeof line.s !== 'string' || typeof line.q !== 'number' || typeof line.h !== 'string' || typeof line.g !== 'string') continue;
      if ((this.heads.get(line.s)?.seq ?? 0) < line.q) this.heads.set(line.s, { sessionId: line.s, seq: line.q, hash: line.h, signature: line.g });
    }
    return content.length > 0 && !content.endsWith('\n');
  }

  private compact(): void {
    const temporary = `${this.path}.compact-${process.pid}`;
    const fd = openSync(temporary, 'w', 0o600);
    try {
      writeSync(fd, [...this.heads.values()].map((head) => `${JSON.stringify(toLine(head))}\n`).join(''));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, this.path);
    const directory = openSync(dirname(this.path), 'r');
    try {
      fsyncSync(directory);
    } finally {
      closeSync(directory);
    }
    closeSync(this.fd);
    this.fd = openSync(this.path, 'a', 0o600);
    this.lines = this.heads.size;
  }
}

function toLine(head: SignedHead): HeadLine {
  return { s: head.sessionId, q: head.seq, h: head.hash, g: head.signature };
}
