/**
 * KVM or software emulation, decided by a probe that cannot hang: a tiny VM
 * (the guest kernel and an initramfs that prints a marker and powers off) is
 * started under KVM with a hard deadline and killed past it. Only a marker on
 * its console selects KVM. Measured on the development hosts (a nested PVM
 * KVM): `-cpu host` aborts, the default CPU crawls or dies with an emulation
 * failure, so they all land on TCG. The verdict is cached per host kernel,
 * QEMU binary and guest kernel; a host without /dev/kvm is TCG at once.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { release } from 'node:os';
import { join } from 'node:path';
import type { Accelerator } from './qemu-command-line.js';
import { newcArchive } from './newc-archive.js';

/** How long a KVM guest may take to print its marker; a working KVM needs well under a second. */
export const KVM_PROBE_DEADLINE_MS = 15_000;
const MARKER = 'AIRLOCK-KVM-PROBE-OK';

/** What the probe found, and why. */
export interface AcceleratorVerdict {
  accelerator: Accelerator;
  reason: string;
}

/** The accelerator to use; `cachePath` keeps the verdict across restarts. */
export async function chooseAccelerator(options: { qemuBinary: string; kernelPath: string; busyboxPath: string; cachePath: string }): Promise<AcceleratorVerdict> {
  if (!(await access('/dev/kvm', constants.R_OK | constants.W_OK).then(() => true, () => false))) {
    return { accelerator: 'tcg', reason: '/dev/kvm is not there (or not usable): software emulation' };
  }
  const key = await probeKey(options);
  const cached = await readFile(options.cachePath, 'utf8').then((text) => JSON.parse(text) as { key?: string; verdict?: AcceleratorVerdict }, () => undefined);
  if (cached?.key === key && cached.verdict) return cached.verdict;
  const verdict = await probeKvm(options);
  // Written whole and renamed: installations starting at once may probe together; each file is complete.
  const temporary = `${options.cachePath}.${process.pid}`;
  await writeFile(temporary, JSON.stringify({ key, verdict, probedAt: new Date().toISOString() }));
  await rename(temporary, options.cachePath);
  return verdict;
}

/** Boots the probe guest under KVM once; never waits past the deadline. */
async function probeKvm(options: { qemuBinary: string; kernelPath: string; busyboxPath: string }): Promise<AcceleratorVerdict> {
  const dir = await mkdtemp('/var/tmp/airlock-kvm-probe-');
  try {
    const init = `#!/bin/busybox sh\n/bin/busybox echo ${MARKER}\n/bin/busybox poweroff -f\n`;
    await writeFile(
      join(dir, 'initramfs.cpio'),
      newcArchive([
        { kind: 'directory', path: 'bin' },
        { kind: 'file', path: 'bin/busybox', content: await readFile(options.busyboxPath), mode: 0o755 },
        { kind: 'file', path: 'init', content: Buffer.from(init), mode: 0o755 },
      ]),
    );
    const console = join(dir, 'console.log');
    const args = [
      '-M', 'microvm', '-accel', 'kvm', '-cpu', 'host', '-m', '128M', '-smp', '1',
      '-nodefaults', '-no-user-config', '-display', 'none', '-no-reboot',
      '-chardev', `file,id=console,path=${console}`, '-serial', 'chardev:console',
      '-kernel', options.kernelPath, '-initrd', join(dir, 'initramfs.cpio'),
      '-append', 'console=ttyS0 quiet panic=-1 reboot=t pci=off',
    ];
    const outcome = await new Promise<{ code: number | null; stderr: string; timedOut: boolean }>((resolve) => {
      const child = spawn(options.qemuBinary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        if (stderr.length < 2000) stderr += chunk.toString();
      });
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve({ code: null, stderr, timedOut: true });
      }, KVM_PROBE_DEADLINE_MS);
      child.on('error', (error) => {
        clearTimeout(timer);
        resolve({ code: -1, stderr: error.message, timedOut: false });
      });
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, stderr, timedOut: false });
      });
    });
    const printed = (await readFile(console, 'utf8').catch(() => '')).includes(MARKER);
    if (printed) return { accelerator: 'kvm', reason: 'a KVM guest booted and answered within the probe deadline' };
    const why = outcome.timedOut ? `no answer within ${KVM_PROBE_DEADLINE_MS / 1000} s (killed)` : `QEMU exited with ${outcome.code}: ${outcome.stderr.trim().split('\n').at(-1) ?? ''}`;
    return { accelerator: 'tcg', reason: `KVM is present but unusable for a stock guest (${why}): software emulation` };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function probeKey(options: { qemuBinary: string; kernelPath: string }): Promise<string> {
  const facts = await Promise.all([stat(options.qemuBinary), stat(options.kernelPath)]);
  return createHash('sha256')
    .update(`${release()}\0${options.qemuBinary}\0${facts[0].size}:${facts[0].mtimeMs}\0${facts[1].size}:${facts[1].mtimeMs}`)
    .digest('hex');
}
