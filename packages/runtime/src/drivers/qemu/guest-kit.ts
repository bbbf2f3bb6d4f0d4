/**
 * What every microVM boots: the guest kernel (Debian's cloud kernel, fetched
 * by scripts/fetch-microvm-kernel.sh) and the base initramfs (the host's
 * static busybox, the guest agent compiled from guest/*.c, the
 * kernel's virtio modules and /init). Built once and cached by content hash,
 * so a changed agent source or kernel makes a new archive and nothing stale
 * is booted.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AirlockError } from '../../core/errors.js';
import { GUEST_INIT_SCRIPT, GUEST_MODULES } from './guest-init-script.js';
import { newcArchive, type NewcEntry } from './newc-archive.js';

/** The guest agent's C sources (`*.c`, `*.h`), shipped with the package. */
export const AGENT_SOURCE_DIR = fileURLToPath(new URL('../../../../guest/', import.meta.url));

/** The kernel and the base initramfs, ready to boot. */
export interface GuestKit {
  kernelPath: string;
  initramfsPath: string;
  /** `uname -r` of the guest */
  kernelRelease: string;
  /** Debian package and version the kernel came from */
  kernelPackage: string;
  /** `sha256:<hex>` of the kernel the VM boots, for the audit log */
  kernelDigest: string;
  /** `sha256:<hex>` of the base initramfs (agent, modules, init) */
  initramfsDigest: string;
}

/** Where the kit's inputs are. */
export interface GuestKitOptions {
  /** made by scripts/fetch-microvm-kernel.sh: vmlinux, modules/, kernel.json */
  kernelDir: string;
  /** where the compiled agent and the base initramfs are cached */
  cacheDir: string;
  /** a statically linked busybox; default /bin/busybox */
  busyboxPath?: string;
  /** default AGENT_SOURCE_DIR */
  agentSourceDir?: string;
}

const SETUP_HINT = 'run scripts/setup.sh (or scripts/fetch-microvm-kernel.sh), which downloads Debian\'s cloud kernel without installing it';

/** The kit, built now if its cached parts are missing. Throws DRIVER_UNAVAILABLE naming the fix. */
export async function prepareGuestKit(options: GuestKitOptions): Promise<GuestKit> {
  const kernel = await readKernel(options.kernelDir);
  await mkdir(options.cacheDir, { recursive: true, mode: 0o700 });
  const agentPath = await compileAgent(options.agentSourceDir ?? AGENT_SOURCE_DIR, options.cacheDir);
  const busyboxPath = options.busyboxPath ?? '/bin/busybox';
  const busybox = await readFile(busyboxPath).catch(() => {
    throw new AirlockError('DRIVER_UNAVAILABLE', `no static busybox at ${busyboxPath}; apt-get install busybox-static`);
  });
  const agent = await readFile(agentPath);
  const modules = await Promise.all(
    GUEST_MODULES.map(async (name) => ({
      name,
      content: await readFile(join(options.kernelDir, 'modules', `${name}.ko`)).catch(() => {
        throw new AirlockError('DRIVER_UNAVAILABLE', `kernel module ${name}.ko is missing from ${options.kernelDir}; ${SETUP_HINT}`);
      }),
    })),
  );
  const entries: NewcEntry[] = [
    ...['bin', 'dev', 'proc', 'sys', 'lib', 'lib/modules', 'airlock'].map((path): NewcEntry => ({ kind: 'directory', path })),
    { kind: 'file', path: 'init', content: Buffer.from(GUEST_INIT_SCRIPT), mode: 0o755 },
    { kind: 'file', path: 'bin/busybox', content: busybox, mode: 0o755 },
    { kind: 'file', path: 'bin/airlock-vm-agent', content: agent, mode: 0o755 },
    { kind: 'file', path: 'airlock/modules', content: Buffer.from(`${GUEST_MODULES.join(' ')}\n`) },
    ...modules.map((module): NewcEntry => ({ kind: 'file', path: `lib/modules/${module.name}.ko`, content: module.content })),
  ];
  const archive = newcArchive(entries);
  const initramfsDigest = sha256(archive);
  const initramfsPath = join(options.cacheDir, `initramfs-${initramfsDigest.slice(7, 23)}.cpio`);
  if (!(await exists(initramfsPath))) await writeAtomically(initramfsPath, archive);
  return {
    kernelPath: join(options.kernelDir, 'vmlinux'),
    initramfsPath,
    kernelRelease: kernel.release,
    kernelPackage: `${kernel.package} ${kernel.version}`,
    kernelDigest: `sha256:${kernel.vmlinuxSha256}`,
    initramfsDigest,
  };
}

interface KernelFacts {
  package: string;
  version: string;
  release: string;
  vmlinuxSha256: string;
}

async function readKernel(kernelDir: string): Promise<KernelFacts> {
  let facts: Partial<KernelFacts>;
  try {
    facts = JSON.parse(await readFile(join(kernelDir, 'kernel.json'), 'utf8')) as Partial<KernelFacts>;
  } catch {
    throw new AirlockError('DRIVER_UNAVAILABLE', `no guest kernel in ${kernelDir}; ${SETUP_HINT}`);
  }
  if (!facts.package || !facts.version || !facts.release || !/^[0-9a-f]{64}$/.test(facts.vmlinuxSha256 ?? '') || !(await exists(join(kernelDir, 'vmlinux')))) {
    throw new AirlockError('DRIVER_UNAVAILABLE', `the guest kernel in ${kernelDir} is incomplete; ${SETUP_HINT}`);
  }
  return facts as KernelFacts;
}

/** Compiles the agent statically (cached by its sources' hash); DRIVER_UNAVAILABLE when gcc is missing. */
async function compileAgent(sourceDir: string, cacheDir: string): Promise<string> {
  const names = (await readdir(sourceDir).catch(() => [] as string[])).filter((name) => /\.[ch]$/.test(name)).sort();
  if (!names.some((name) => name.endsWith('.c'))) throw new AirlockError('DRIVER_UNAVAILABLE', `the guest agent sources in ${sourceDir} are missing; reinstall Airlock`);
  const hash = createHash('sha256');
  for (const name of names) hash.update(`${name}\0`).update(await readFile(join(sourceDir, name))).update('\0');
  const output = join(cacheDir, `airlock-vm-agent-${hash.digest('hex').slice(0, 16)}`);
  const sources = names.filter((name) => name.endsWith('.c')).map((name) => join(sourceDir, name));
  if (await exists(output)) return output;
  const temporary = `${output}.partial-${randomBytes(4).toString('hex')}`;
  try {
    await new Promise<void>((resolve, reject) => {
      execFile('gcc', ['-static', '-Os', '-Wall', '-o', temporary, ...sources], { timeout: 120_000 }, (error, _stdout, stderr) => {
        if (!error) return resolve();
        const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
        reject(
          new AirlockError(
            'DRIVER_UNAVAILABLE',
            missing ? 'gcc is not installed; the microvm driver compiles its guest agent once: apt-get install gcc libc6-dev' : `compiling the guest agent failed: ${String(stderr).trim().slice(-1000)}`,
            { cause: error },
          ),
        );
      });
    });
    await rename(temporary, output);
    return output;
  } finally {
    await rm(temporary, { force: true });
  }
}

async function writeAtomically(path: string, content: Buffer): Promise<void> {
  const temporary = `${path}.partial-${randomBytes(4).toString('hex')}`;
  await writeFile(temporary, content, { mode: 0o600 });
  await rename(temporary, path);
}

function sha256(content: Buffer): string {
  return `sha256:${createHash('sha256').update(content).digest('hex')}`;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
