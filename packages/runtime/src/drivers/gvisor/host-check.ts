/**
 * Checks that this host can run the gVisor driver, and says how to fix it
 * when not. Features are probed, not inferred from the version string: the
 * driver needs `--overlay2=root:dir=` and `checkpoint --compression=none`
 * (the 20240729 build has both; the 20221219 bookworm build has neither).
 */
import { readFile, stat } from 'node:fs/promises';
import { AirlockError } from '../../core/errors.js';
import { hasCgroupV1 } from './cgroups.js';
import type { Runsc } from './runsc.js';

const INSTALL_FIX = 'install the newer gVisor with `apt-get install -t bookworm-backports runsc` (enable bookworm-backports in the apt sources first)';

/** Throws DRIVER_UNAVAILABLE naming the fix when something the driver needs is missing. */
export async function checkGvisorHost(runsc: Runsc, agentHostPath: string): Promise<{ version: string }> {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    throw new AirlockError('DRIVER_UNAVAILABLE', 'the gVisor driver needs root (runsc, cgroups, loop and overlay mounts): run the server as root');
  }
  const version = await runsc.version();
  const flags = await runsc.run(['flags'], { timeoutMs: 15_000 });
  const checkpointHelp = await runsc.run(['help', 'checkpoint'], { timeoutMs: 15_000 });
  const flagText = `${flags.stdout}${flags.stderr}`;
  const checkpointText = `${checkpointHelp.stdout}${checkpointHelp.stderr}`;
  if (!flagText.includes('-overlay2') || !/dir=/.test(flagText) || !checkpointText.includes('-compression') || !checkpointText.includes('none')) {
    throw new AirlockError(
      'DRIVER_UNAVAILABLE',
      `${version || 'runsc'} is too old: it lacks --overlay2=root:dir= or checkpoint --compression=none; ${INSTALL_FIX}`,
      {
        details: { version },
      },
    );
  }
  if (!(await hasCgroupV1())) {
    throw new AirlockError(
      'DRIVER_UNAVAILABLE',
      'the gVisor driver needs the cgroup v1 memory, cpu and cpuacct hierarchies under /sys/fs/cgroup; boot with cgroup v1 (systemd.unified_cgroup_hierarchy=0)',
    );
  }
  const filesystems = await readFile('/proc/filesystems', 'utf8').catch(() => '');
  if (!/\toverlay\n/.test(filesystems)) {
    throw new AirlockError('DRIVER_UNAVAILABLE', 'the kernel has no overlay filesystem: run `modprobe overlay`');
  }
  const agent = await stat(agentHostPath).catch(() => undefined);
  if (!agent?.isFile() || (agent.mode & 0o111) === 0) {
    throw new AirlockError(
      'DRIVER_UNAVAILABLE',
      `the in-sandbox agent is not built (no executable at ${agentHostPath}): run \`scripts/setup.sh\` or \`npm run build\` (needs gcc: \`apt-get install gcc make libc6-dev\`), or pass agentHostPath`,
    );
  }
  return { version };
}
