/**
 * Takeover recordings on local disk: `<root>/<sessionId>/<takeoverId>.cast`
 * (0600). A recording is written as the terminal runs, so a crash of the
 * server leaves a valid prefix (asciicast is one JSON value per line).
 * Recordings are evidence: they stay when the session is terminated, like
 * its audit log, and go with the data dir.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../core/errors.js';
import type { RecordingSink, TerminalRecordings } from '../core/terminal-recordings.js';

const NAME = /^[A-Za-z0-9_-]{1,128}$/;

/** `TerminalRecordings` over a host directory. */
export class TerminalRecordingDirectory implements TerminalRecordings {
  constructor(private readonly root: string) {}

  async create(sessionId: string, takeoverId: string): Promise<RecordingSink> {
    const dir = join(this.root, checkName(sessionId));
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const file = createWriteStream(join(dir, `${checkName(takeoverId)}.cast`), { mode: 0o600, flags: 'wx' });
    const hash = createHash('sha256');
    let bytes = 0;
    let failure: Error | undefined;
    file.on('error', (error) => (failure ??= error));
    return {
      append(text) {
        const chunk = Buffer.from(text);
        hash.update(chunk);
        bytes += chunk.length;
        file.write(chunk);
      },
      close() {
        return new Promise((resolve, reject) => {
          file.end(() => (failure ? reject(failure) : resolve({ bytes, sha256: hash.digest('hex') })));
        });
      },
    };
  }

  async get(sessionId: string, takeoverId: string): Promise<Buffer | undefined> {
    if (!NAME.test(sessionId) || !NAME.test(takeoverId)) return undefined;
    return readFile(join(this.root, sessionId, `${takeoverId}.cast`)).catch(() => undefined);
  }
}

function checkName(name: string): string {
  if (!NAME.test(name))
    throw new AirlockError('INVALID_ARGUMENTS', `a recording name is letters, digits, '_' and '-' (at most 128), got ${JSON.stringify(name)}`);
  return name;
}
