/**
 * DiskImages over plain sparse files, for unit tests of object storage
 * without loop mounts: `<root>/<session>/disk.ext4` and its saved-in note.
 * Reads are not frozen (nothing writes to these files while a test reads).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DiskImages } from '../../src/objects/disk-images.js';

/** Disk images as files. */
export class FileDiskImages implements DiskImages {
  constructor(readonly root: string) {}

  imagePath(sessionId: string): string {
    return join(this.root, sessionId, 'disk.ext4');
  }

  async has(sessionId: string): Promise<boolean> {
    return existsSync(this.imagePath(sessionId));
  }

  async readImage<T>(sessionId: string, read: (imagePath: string, sizeBytes: number) => Promise<T>): Promise<T> {
    return read(this.imagePath(sessionId), statSync(this.imagePath(sessionId)).size);
  }

  async createFromImage(sessionId: string, write: (imagePath: string) => Promise<void>): Promise<string> {
    if (await this.has(sessionId)) throw new Error(`session ${sessionId} already has a disk`);
    mkdirSync(join(this.root, sessionId), { recursive: true });
    const partial = `${this.imagePath(sessionId)}.partial`;
    try {
      await write(partial);
      renameSync(partial, this.imagePath(sessionId));
    } catch (error) {
      rmSync(join(this.root, sessionId), { recursive: true, force: true });
      throw error;
    }
    return join(this.root, sessionId);
  }

  async savedIn(sessionId: string): Promise<string | undefined> {
    const path = join(this.root, sessionId, 'saved-in');
    return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
  }

  async recordSavedIn(sessionId: string, snapshotId: string): Promise<void> {
    writeFileSync(join(this.root, sessionId, 'saved-in'), snapshotId);
  }

  async destroy(sessionId: string): Promise<void> {
    rmSync(join(this.root, sessionId), { recursive: true, force: true });
  }
}
