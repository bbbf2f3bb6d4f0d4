/**
 * The script that bounds gVisor's procfs dentry cache decides from the mount
 * table whether to mount; run here by the host's sh with a stub for busybox
 * that records its arguments. The mount itself is covered against real runsc
 * by bench/exec-memory-growth.bench.ts and the driver's integration tests.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TOOLBOX_PATH } from '../../../src/drivers/gvisor/in-sandbox-scripts.js';
import { PROC_DENTRY_CACHE_LIMIT, PROC_MOUNT_SCRIPT } from '../../../src/drivers/gvisor/proc-dentry-cache.js';

/** Runs the script against `mounts`; returns the stub busybox's argv, or '' when it was not called. */
function runScript(mounts: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-proc-script-'));
  try {
    const stub = join(dir, 'busybox');
    writeFileSync(stub, `#!/bin/sh\necho "$*" >>${join(dir, 'calls')}\n`);
    chmodSync(stub, 0o755);
    writeFileSync(join(dir, 'mounts'), mounts);
    execFileSync('sh', ['-c', PROC_MOUNT_SCRIPT.replace(`B=${TOOLBOX_PATH}`, `B=${stub}`), 'airlock-proc', join(dir, 'mounts')]);
    return readFileSync(join(dir, 'calls'), 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const BASE = ['none / overlay rw 0 0', 'none /sys sysfs rw,dentry_cache_limit=1000 0 0', 'none /proc proc rw,dentry_cache_limit=1000 0 0', 'none /dev/pts devpts rw 0 0'];
const MOUNT = `mount -t proc -o dentry_cache_limit=${PROC_DENTRY_CACHE_LIMIT} proc /proc`;

describe('bounded /proc mount script', () => {
  it('mounts over the /proc that runsc made', () => {
    assert.equal(runScript(`${BASE.join('\n')}\n`), MOUNT);
  });
  it('does nothing when the top /proc is already bounded (a restored image)', () => {
    assert.equal(runScript(`${[...BASE, `none /proc proc rw,dentry_cache_limit=${PROC_DENTRY_CACHE_LIMIT} 0 0`].join('\n')}\n`), '');
  });
  it('looks at the top /proc only, and at whole options', () => {
    const lower = `none /proc proc rw,dentry_cache_limit=${PROC_DENTRY_CACHE_LIMIT} 0 0`;
    assert.equal(runScript(`${[...BASE.slice(0, 2), lower, BASE[2] ?? ''].join('\n')}\n`), MOUNT);
    assert.equal(runScript(`${[...BASE, `none /proc proc rw,dentry_cache_limit=${PROC_DENTRY_CACHE_LIMIT}0 0 0`].join('\n')}\n`), MOUNT);
    assert.equal(runScript(`${[...BASE, `none /proc/sys proc rw,dentry_cache_limit=${PROC_DENTRY_CACHE_LIMIT} 0 0`].join('\n')}\n`), MOUNT);
  });
});
