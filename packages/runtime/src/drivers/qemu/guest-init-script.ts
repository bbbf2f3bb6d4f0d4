/**
 * The initramfs's /init (busybox sh): it turns the guest's disks into the
 * machine's root and hands pid 1 to the guest agent.
 *
 *   /dev/vdX serial airlock-root  the image, ext4, mounted read-only (lower layer)
 *   /dev/vdY serial airlock-disk  the session disk, ext4: microvm-root/{upper,work}
 *                                 (the writable layer) and workspace/ (/workspace)
 *   overlay(lower, upper) ──▶ the new root; a per-call machine's upper is a tmpfs
 *   /.airlock (tmpfs)            the toolbox busybox and the agent, outside any disk
 *   /tmp (tmpfs), cgroup2 with `workload` (pids.max = the process limit)
 *
 * Its configuration comes from /airlock/config, which the VM's own small
 * archive (appended to the shared base archive) carries: shell assignments of
 * values the driver validated. The cloud kernel's virtio drivers are modules,
 * loaded here in dependency order. Any failure powers the machine off with
 * the reason on the console, which the driver reports.
 */

/** Kernel modules the guest needs, in load order (each after its dependencies). */
export const GUEST_MODULES: readonly string[] = ['virtio_ring', 'virtio', 'virtio_mmio', 'virtio_blk', 'virtio_console', 'failover', 'net_failover', 'virtio_net', 'overlay'];

/** The name of the virtio-serial port the agent listens on. */
export const AGENT_PORT_NAME = 'airlock';
/** Where the agent and the toolbox busybox live inside the machine. */
export const GUEST_TOOLBOX_DIR = '/.airlock/bin';
/** Marker the init prints right before it starts the agent; the console log shows how far a boot got. */
export const AGENT_START_MARKER = 'airlock-init: starting the guest agent';

/** The /init script. */
export const GUEST_INIT_SCRIPT = `#!/bin/busybox sh
B=/bin/busybox
fail() { $B echo "airlock-init: failed: $*" >&2; $B sync; $B poweroff -f; }
$B mount -t proc proc /proc && $B mount -t sysfs sys /sys && $B mount -t devtmpfs dev /dev || fail "cannot mount /proc, /sys and /dev"
for m in $($B cat /airlock/modules); do $B insmod /lib/modules/$m.ko || fail "cannot load kernel module $m"; done
. /airlock/config || fail "no /airlock/config"
by_serial() {
  for d in /sys/block/vd*; do [ "$($B cat $d/serial 2>/dev/null)" = "$1" ] && { $B echo /dev/\${d##*/}; return 0; }; done
  return 1
}
port=
for p in /sys/class/virtio-ports/*; do [ "$($B cat $p/name 2>/dev/null)" = ${AGENT_PORT_NAME} ] && port=/dev/\${p##*/}; done
[ -n "$port" ] || fail "no virtio-serial port named ${AGENT_PORT_NAME}"
root=$(by_serial airlock-root) || fail "no image disk (serial airlock-root)"
disk=$(by_serial airlock-disk) || fail "no session disk (serial airlock-disk)"
$B mkdir -p /lower /disk /newroot /scratch
$B mount -t ext4 -o ro,noload $root /lower || fail "cannot mount the image disk $root"
$B mount -t ext4 -o noatime $disk /disk || fail "cannot mount the session disk $disk (not ext4, or damaged)"
if [ "$AIRLOCK_ROOT_MODE" = ephemeral ]; then
  $B mount -t tmpfs -o mode=0755 scratch /scratch && layer=/scratch
else
  layer=/disk/microvm-root
fi
$B mkdir -p $layer/upper $layer/work /disk/workspace || fail "cannot make the writable layer"
$B mount -t overlay overlay -o lowerdir=/lower,upperdir=$layer/upper,workdir=$layer/work /newroot || fail "cannot mount the root overlay"
$B mkdir -p /newroot/.airlock /newroot/workspace /newroot/tmp /newroot/proc /newroot/sys /newroot/dev 2>/dev/null
$B mount -t tmpfs -o mode=0755,size=16m airlock /newroot/.airlock || fail "cannot mount /.airlock"
$B mkdir -p /newroot${GUEST_TOOLBOX_DIR} /newroot/.airlock/files
$B cp /bin/busybox /bin/airlock-vm-agent /newroot${GUEST_TOOLBOX_DIR}/ || fail "cannot install the agent"
$B mount --bind /disk/workspace /newroot/workspace || fail "cannot mount /workspace"
$B mount -t tmpfs -o mode=1777 tmp /newroot/tmp
if [ -n "$AIRLOCK_FILES" ]; then
  $B echo "$AIRLOCK_FILES" | while read -r index target; do
    [ -n "$target" ] && [ -f "/newroot$target" ] && [ ! -L "/newroot$target" ] || continue
    $B cp /airlock/files/$index /newroot/.airlock/files/$index && $B mount --bind /newroot/.airlock/files/$index "/newroot$target" && $B mount -o remount,bind,ro "/newroot$target"
  done
fi
$B mount --move /dev /newroot/dev && $B mkdir -p /newroot/dev/pts && $B mount -t devpts -o newinstance,ptmxmode=0666 devpts /newroot/dev/pts
$B mount --move /proc /newroot/proc && $B mount --move /sys /newroot/sys
$B mount -t cgroup2 cgroup2 /newroot/sys/fs/cgroup || fail "cannot mount cgroup2"
$B echo +pids > /newroot/sys/fs/cgroup/cgroup.subtree_control
$B mkdir /newroot/sys/fs/cgroup/workload && $B echo "$AIRLOCK_MAX_PROCESSES" > /newroot/sys/fs/cgroup/workload/pids.max || fail "cannot set the process limit"
$B hostname "$AIRLOCK_HOSTNAME"
$B ip link set lo up
if [ -n "$AIRLOCK_NET_ADDRESS" ]; then
  $B ip link set eth0 up && $B ip addr add "$AIRLOCK_NET_ADDRESS" dev eth0 && $B ip route add default via "$AIRLOCK_NET_GATEWAY" dev eth0 || fail "cannot configure eth0"
fi
$B echo "${AGENT_START_MARKER} on $port"
exec $B switch_root /newroot ${GUEST_TOOLBOX_DIR}/airlock-vm-agent "$port"
`;
