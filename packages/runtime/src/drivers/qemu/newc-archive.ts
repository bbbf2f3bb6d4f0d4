/**
 * A writer for the cpio "newc" format, the only one the Linux kernel unpacks
 * as an initramfs. The kernel unpacks several archives laid end to end, so a
 * VM's initramfs is the shared base archive followed by a small one of its
 * own (its configuration): no rebuild of the base per VM.
 */

/** One entry: a directory, a regular file or a symbolic link. */
export type NewcEntry =
  | { kind: 'directory'; path: string; mode?: number }
  | { kind: 'file'; path: string; content: Buffer; mode?: number }
  | { kind: 'symlink'; path: string; target: string };

const TYPE_BITS = { directory: 0o040000, file: 0o100000, symlink: 0o120000 } as const;

/** The archive of `entries` (paths relative, without a leading '/'), padded to 512 bytes. */
export function newcArchive(entries: readonly NewcEntry[]): Buffer {
  const parts: Buffer[] = [];
  let inode = 1;
  let offset = 0;
  const push = (buffer: Buffer): void => {
    parts.push(buffer);
    offset += buffer.length;
  };
  const pad = (): void => {
    if (offset % 4 !== 0) push(Buffer.alloc(4 - (offset % 4)));
  };
  const write = (path: string, mode: number, data: Buffer): void => {
    if (path.startsWith('/') || path.includes('\0')) throw new Error(`newc path must be relative: ${path}`);
    const name = Buffer.from(`${path}\0`, 'utf8');
    const fields = [inode++, mode, 0, 0, 1, 0, data.length, 0, 0, 0, 0, name.length, 0];
    push(Buffer.from(`070701${fields.map((field) => field.toString(16).padStart(8, '0')).join('')}`, 'ascii'));
    push(name);
    pad();
    push(data);
    pad();
  };
  for (const entry of entries) {
    switch (entry.kind) {
      case 'directory':
        write(entry.path, TYPE_BITS.directory | (entry.mode ?? 0o755), Buffer.alloc(0));
        break;
      case 'file':
        write(entry.path, TYPE_BITS.file | (entry.mode ?? 0o644), entry.content);
        break;
      case 'symlink':
        write(entry.path, TYPE_BITS.symlink | 0o777, Buffer.from(entry.target, 'utf8'));
        break;
    }
  }
  write('TRAILER!!!', 0, Buffer.alloc(0));
  if (offset % 512 !== 0) push(Buffer.alloc(512 - (offset % 512)));
  return Buffer.concat(parts);
}
