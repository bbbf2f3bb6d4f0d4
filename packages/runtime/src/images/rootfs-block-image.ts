/**
 * An image's root filesystem as a block device: an ext4 image file made
 * from the rootfs tree (`mkfs.ext4 -d`), for drivers that attach the root as
 * a disk (a microVM's guest kernel mounts it read-only). Built once per image
 * digest and cached, so every session of an image shares one file; made
 * under a temporary name and renamed into place, so a reader never sees half
 * of one and concurrent builders do not collide.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../core/errors.js';
import { toImageError } from './image-errors.js';

/** The rootfs tree and content digest of an image, all a block image is made from. */
export interface RootfsSource {
  rootfsDir: string;
  /** `sha256:<hex>`, or any id that changes whenever the tree does */
  digest: string;
}

const MB = 1024 * 1024;

/** The cached ext4 image of `source` under `cacheDir`, built now when missing; returns its path. */
export async function ensureRootfsBlockImage(source: RootfsSource, cacheDir: string): Promise<string> {
  const name = source.digest.replace(/^sha256:/, '').replace(/[^A-Za-z0-9_.-]/g, '_');
  if (!name) throw new AirlockError('INVALID_ARGUMENTS', 'an image digest is needed to cache its block image');
  const dir = join(cacheDir, 'rootfs-block-images');
  const path = join(dir, `${name}.ext4`);
  if (await exists(path)) return path;
  const temporary = `${path}.partial-${randomBytes(4).toString('hex')}`;
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const used = Number((await run('du', ['-sxb', source.rootfsDir])).split(/\s/)[0]);
    if (!Number.isFinite(used)) throw new Error(`cannot measure ${source.rootfsDir}`);
    // Room for ext4's own metadata and inode tables; the file is sparse, so slack costs nothing.
    const sizeBytes = Math.ceil((used * 1.3 + 64 * MB) / MB) * MB;
    await writeFile(temporary, '');
    await truncate(temporary, sizeBytes);
    // No journal (it is only ever mounted read-only), an inode per 8 KiB (images are many small files).
    await run('mkfs.ext4', ['-q', '-F', '-O', '^has_journal', '-i', '8192', '-m', '0', '-L', 'airlock-image', '-d', source.rootfsDir, temporary]);
    await rename(temporary, path);
    return path;
  } catch (error) {
    await rm(temporary, { force: true });
    throw toImageError(error, `the block image of ${source.rootfsDir} (${dir})`);
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 600_000, maxBuffer: 4 * MB }, (error, stdout, stderr) => {
      if (error) reject(Object.assign(new Error(`${file} ${args.join(' ')}: ${String(stderr).trim() || error.message}`, { cause: error }), { stderr: String(stderr) }));
      else resolve(String(stdout));
    });
  });
}
