/**
 * A fresh identity for a restored gVisor sandbox. runsc ignores a new
 * `hostname` in the spec at restore (measured), so the name is set from
 * inside; `hostname` needs CAP_SYS_ADMIN, which only this one exec gets (the
 * session's own processes never hold it). gVisor's /dev/urandom already draws
 * from the host per read, so the write only matters for drivers whose guest
 * kernel keeps its own pool; it is done anyway, for one contract.
 */
import { AirlockError } from '../../core/errors.js';
import type { SandboxIdentity } from '../../core/sandbox-driver.js';
import { TOOLBOX_PATH } from './in-sandbox-scripts.js';
import type { Runsc } from './runsc.js';

const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const MACHINE_ID = /^[0-9a-f]{32}$/;

// Exit codes name the step that failed; /etc/hostname is best effort (a read-only /etc is the image's choice).
const IDENTITY_SCRIPT = `B=${TOOLBOX_PATH}
$B hostname "$1" || exit 10
printf '%s\\n' "$1" >/etc/hostname 2>/dev/null
printf '%s\\n' "$2" >/etc/machine-id || exit 11
printf '%s' "$3" >/dev/urandom || exit 12
`;

const STEP: Record<number, string> = { 10: 'setting the hostname', 11: 'writing /etc/machine-id', 12: 'writing entropy to /dev/urandom' };

/** Sets hostname, /etc/machine-id and mixes entropy into the RNG of container `containerId`. */
export async function personalizeSandbox(runsc: Runsc, containerId: string, identity: SandboxIdentity): Promise<void> {
  if (!HOSTNAME.test(identity.hostname)) {
    throw new AirlockError('INVALID_ARGUMENTS', `invalid hostname ${JSON.stringify(identity.hostname)}: use 1-63 letters, digits and '-' (not at either end)`);
  }
  if (!MACHINE_ID.test(identity.machineId)) throw new AirlockError('INVALID_ARGUMENTS', 'machineId must be 32 lowercase hex digits');
  const entropy = Buffer.from(identity.entropy).toString('hex');
  const args = ['exec', '--cap', 'CAP_SYS_ADMIN', containerId, TOOLBOX_PATH, 'sh', '-c', IDENTITY_SCRIPT, 'airlock-identity', identity.hostname, identity.machineId, entropy];
  const result = await runsc.run(args, { timeoutMs: 30_000 });
  if (result.code !== 0) {
    const step = STEP[result.code] ?? 'running the identity script';
    throw new AirlockError('DRIVER_FAILED', `giving sandbox ${containerId} its identity failed while ${step}: ${result.stderr.trim().slice(-500) || `exit ${result.code}`}`, {
      details: { exitCode: result.code },
    });
  }
}
