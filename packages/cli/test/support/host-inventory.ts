/**
 * What one Airlock installation has on the host: runsc containers, runsc
 * invocations, mounts, loop devices, cgroups, network namespaces and the
 * folders of its data dir. Crash tests compare it with what the store says
 * should exist, so that nothing is left without an owner.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Everything of an installation found on the host. */
export interface HostInventory {
  /** sandbox ids (container id without the `airlock-` prefix) runsc knows */
  containers: string[];
  /** runsc processes (sandbox, gofer or invocation) on the installation's runsc root */
  runscProcesses: string[];
  /** mount points under the data dir */
  mounts: string[];
  /** loop devices whose backing file is under the data dir */
  loopDevices: string[];
  /** `<hierarchy>/airlock/<sandboxId>` cgroups whose sandbox id names one of `sessionIds` */
  cgroups: string[];
  /** `/var/run/netns` names whose sandbox id names one of `sessionIds` */
  netns: string[];
  /** entries of `sandboxes/`, `disks/`, `snapshots/` and the driver's registry */
  sandboxDirs: string[];
  diskDirs: string[];
  snapshotEntries: string[];
  registryEntries: string[];
}

const CONTAINER_PREFIX = 'airlock-';

/** Reads the installation's host state; `sessionIds` scopes the machine-wide probes (cgroups, netns). */
export function hostInventory(dataDir: string, sessionIds: readonly string[]): HostInventory {
  const runscRoot = join(dataDir, 'runsc', 'runsc');
  const list = spawnSync('runsc', [`--root=${runscRoot}`, 'list', '--format=json'], { encoding: 'utf8' });
  const containers = (JSON.parse(list.stdout.trim() || '[]') as { id: string }[] | null ?? [])
    .map((entry) => entry.id)
    .filter((id) => id.startsWith(CONTAINER_PREFIX))
    .map((id) => id.slice(CONTAINER_PREFIX.length));
  const mentionsSession = (name: string): boolean => sessionIds.some((id) => name.includes(id));
  return {
    containers,
    runscProcesses: processesWithArgument(`--root=${runscRoot}`),
    mounts: mountsUnder(dataDir),
    loopDevices: loopDevicesUnder(dataDir),
    cgroups: cgroupsOf(mentionsSession),
    netns: entries('/var/run/netns').filter(mentionsSession),
    sandboxDirs: entries(join(dataDir, 'sandboxes')),
    diskDirs: entries(join(dataDir, 'disks')),
    snapshotEntries: entries(join(dataDir, 'snapshots')),
    registryEntries: entries(join(dataDir, 'runsc', 'registry')).map((name) => name.replace(/\.json$/, '')),
  };
}

/** Names in a folder, or none when it does not exist. */
function entries(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

function mountsUnder(prefix: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => (line.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))))
    .filter((path) => path.startsWith(`${prefix}/`));
}

function loopDevicesUnder(prefix: string): string[] {
  const out = spawnSync('losetup', ['--list', '--noheadings', '--output', 'NAME,BACK-FILE'], { encoding: 'utf8' }).stdout;
  return out
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.includes(` ${prefix}/`));
}

function cgroupsOf(matches: (name: string) => boolean): string[] {
  const found: string[] = [];
  for (const hierarchy of entries('/sys/fs/cgroup')) {
    for (const name of entries(join('/sys/fs/cgroup', hierarchy, 'airlock'))) {
      if (matches(name)) found.push(`${hierarchy}/airlock/${name}`);
    }
  }
  return found;
}

function processesWithArgument(argument: string): string[] {
  const found: string[] = [];
  for (const entry of entries('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (args.includes(argument)) found.push(`${entry} ${args.slice(0, 1).join(' ')}`);
  }
  return found;
}
