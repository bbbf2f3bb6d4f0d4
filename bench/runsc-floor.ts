/**
 * The floor under Airlock's figures: the same operations done by driving
 * `runsc` directly, with the same rootfs and the same checkpoint flags, and
 * none of Airlock's work (HTTP, policy, audit, disks, file scripts).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The OCI spec of a hand-made floor sandbox: `init` as first process, /proc and a /tmp tmpfs, nothing of Airlock's. */
export function floorSandboxSpec(options: { rootfs: string; init: string[]; path: string; cgroupsPath: string; networkNamespace?: boolean }): Record<string, unknown> {
  const namespaces = ['pid', ...(options.networkNamespace ? ['network'] : []), 'ipc', 'uts', 'mount'].map((type) => ({ type }));
  return {
    ociVersion: '1.0.0',
    process: { user: { uid: 0, gid: 0 }, args: options.init, env: [`PATH=${options.path}`], cwd: '/' },
    root: { path: options.rootfs, readonly: false },
    hostname: 'floor',
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc' },
      { destination: '/tmp', type: 'tmpfs', source: 'tmpfs' },
    ],
    linux: { namespaces, cgroupsPath: options.cgroupsPath },
  };
}

/** A runsc sandbox driven by hand. */
export class RawRunsc {
  private readonly root: string;
  private readonly bundle: string;
  private readonly id: string;
  private generation = 0;

  /** `init` is the sandbox's first process (default: sleep); processes started by `runsc exec` do not survive a restore. */
  constructor(workDir: string, rootfs: string, name: string, init: string[] = ['/bin/sleep', 'infinity']) {
    this.root = join(workDir, 'runsc-root');
    this.bundle = join(workDir, `bundle-${name}`);
    this.id = `floor-${name}-${process.pid}`;
    mkdirSync(this.root, { recursive: true });
    mkdirSync(this.bundle, { recursive: true });
    const spec = floorSandboxSpec({ rootfs, init, path: '/usr/local/bin:/usr/bin:/bin', cgroupsPath: `/airlock-floor/${this.id}` });
    writeFileSync(join(this.bundle, 'config.json'), JSON.stringify(spec));
  }

  private get current(): string {
    return `${this.id}-${this.generation}`;
  }

  private runsc(args: string[], input?: string): string {
    return execFileSync('runsc', ['--root', this.root, '--network=none', '--overlay2=root:memory', ...args], { cwd: this.bundle, input: input ?? '', maxBuffer: 1 << 26 }).toString();
  }

  /** `runsc run --detach`. */
  start(): void {
    this.generation += 1;
    const child = spawnSync('runsc', ['--root', this.root, '--network=none', '--overlay2=root:memory', 'run', '--detach', this.current], { cwd: this.bundle, stdio: 'ignore' });
    if (child.status !== 0) throw new Error('runsc run failed');
  }

  /** `runsc exec`. */
  exec(argv: string[], input?: string): string {
    return this.runsc(['exec', this.current, ...argv], input);
  }

  /** Starts a detached process in the sandbox. */
  background(argv: string[]): void {
    spawn('runsc', ['--root', this.root, 'exec', '--detach', this.current, ...argv], { stdio: 'ignore' }).unref();
  }

  /** `runsc pause`. */
  pause(): void {
    spawnSync('runsc', ['--root', this.root, 'pause', this.current], { stdio: 'ignore' });
  }

  /** `runsc resume`. */
  unpause(): void {
    spawnSync('runsc', ['--root', this.root, 'resume', this.current], { stdio: 'ignore' });
  }

  /** `runsc checkpoint --compression=none` then delete. */
  checkpoint(imageDir: string): void {
    rmSync(imageDir, { recursive: true, force: true });
    mkdirSync(imageDir, { recursive: true });
    this.runsc(['checkpoint', '--compression=none', `--image-path=${imageDir}`, this.current]);
    spawnSync('runsc', ['--root', this.root, 'delete', '-force', this.current], { stdio: 'ignore' });
  }

  /** `runsc restore --detach` under a new id. */
  restore(imageDir: string): void {
    this.generation += 1;
    const child = spawnSync('runsc', ['--root', this.root, '--network=none', '--overlay2=root:memory', 'restore', '--detach', `--image-path=${imageDir}`, this.current], { cwd: this.bundle, stdio: 'ignore' });
    if (child.status !== 0) throw new Error('runsc restore failed');
  }

  /** Kills and deletes the sandbox. */
  destroy(): void {
    spawnSync('runsc', ['--root', this.root, 'kill', this.current, 'KILL'], { stdio: 'ignore' });
    spawnSync('runsc', ['--root', this.root, 'delete', '-force', this.current], { stdio: 'ignore' });
    spawnSync('sh', ['-c', `for c in /sys/fs/cgroup/*/airlock-floor/${this.id}*; do rmdir "$c" 2>/dev/null; done; true`]);
  }
}
