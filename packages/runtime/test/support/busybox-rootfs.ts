/**
 * A tiny image rootfs for integration tests, built in milliseconds from the
 * host's static busybox: `bin/busybox` plus applet symlinks, `/tmp`, `/etc`.
 * Also a fingerprint of a directory tree, to prove a rootfs stayed untouched.
 */
import { execFile } from 'node:child_process';
import { copyFile, chmod, lstat, mkdir, readdir, readlink, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Applets linked into `bin/`; the conformance suite relies on these. */
export const BUSYBOX_APPLETS = [
  'sh', 'cat', 'ls', 'sleep', 'echo', 'printf', 'pwd', 'mkdir', 'rm', 'touch', 'ps', 'kill', 'dd', 'head', 'tail',
  'awk', 'sed', 'grep', 'wc', 'env', 'hostname', 'id', 'test', 'true', 'false', 'seq', 'expr', 'yes', 'stat', 'sync', 'tr', 'usleep', 'nc', 'netstat', 'ln', 'mv', 'chmod', 'mkfifo', 'poweroff',
];

/** Builds the rootfs at `dir` (which must not exist yet) from a static busybox. */
export async function buildBusyboxRootfs(dir: string, busyboxPath = '/bin/busybox'): Promise<void> {
  const { stdout } = await execFileAsync('file', ['-L', busyboxPath]).catch(() => ({ stdout: 'statically linked' }));
  if (!/static/.test(stdout)) throw new Error(`${busyboxPath} is not static: install busybox-static`);
  for (const sub of ['bin', 'etc', 'tmp', 'root', 'usr/bin']) await mkdir(join(dir, sub), { recursive: true });
  await chmod(join(dir, 'tmp'), 0o1777);
  await copyFile(busyboxPath, join(dir, 'bin/busybox'));
  await chmod(join(dir, 'bin/busybox'), 0o755);
  for (const applet of BUSYBOX_APPLETS) await symlink('busybox', join(dir, 'bin', applet));
  await writeFile(join(dir, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
  await writeFile(join(dir, 'etc/group'), 'root:x:0:\n');
  await writeFile(join(dir, 'etc/hostname'), 'image\n');
}

/**
 * A sorted listing of every entry under `dir` with type, mode, size, mtime and
 * link target: equal fingerprints mean nothing was added, removed or written.
 */
export async function treeFingerprint(dir: string): Promise<string[]> {
  const lines: string[] = [];
  const walk = async (relative: string): Promise<void> => {
    const entries = await readdir(join(dir, relative));
    for (const name of entries.sort()) {
      const path = join(relative, name);
      const info = await lstat(join(dir, path));
      const target = info.isSymbolicLink() ? ` -> ${await readlink(join(dir, path))}` : '';
      lines.push(`${path} ${info.mode.toString(8)} ${info.size} ${info.mtimeMs}${target}`);
      if (info.isDirectory()) await walk(path);
    }
  };
  const root = await lstat(dir);
  lines.push(`. ${root.mode.toString(8)} ${root.mtimeMs}`);
  await walk('');
  return lines;
}
