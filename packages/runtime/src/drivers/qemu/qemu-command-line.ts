/**
 * The QEMU command line of one microVM. Pure: the driver and the unit tests
 * both read it. Every device is virtio-mmio on QEMU's `microvm` machine (no
 * PCI, no firmware: QEMU loads the kernel itself). Guest RAM (GuestMemory):
 * a shared file for a machine booted fresh or resumed, so a snapshot saves
 * only device state (`x-ignore-shared`) and takes the file as the memory
 * image; a private mapping of a snapshot's memory file for a fork branch, so
 * branches share its pages copy-on-write; anonymous memory for a machine
 * restored from a full migration stream (loading a stream reads every page,
 * which in a file mapping would make every page resident).
 */

/** Where a VM's RAM lives; see the file comment. */
export type GuestMemory = { kind: 'shared-file'; path: string } | { kind: 'private-file'; path: string } | { kind: 'anonymous' };

/** Software emulation or the host's KVM. */
export type Accelerator = 'tcg' | 'kvm';

/** Everything a command line depends on. */
export interface MachineLayout {
  sandboxId: string;
  accelerator: Accelerator;
  /** guest vCPUs (whole) and RAM in MiB */
  cpus: number;
  memoryMb: number;
  memory: GuestMemory;
  kernelPath: string;
  initramfsPath: string;
  /** host TSC frequency in kHz: under TCG a guest without it hangs at boot ("could not calculate TSC khz") */
  tscKhz: number;
  rootfsImage: string;
  diskImage: string;
  /** Unix sockets QEMU serves: the agent's port and the monitor */
  agentSocket: string;
  qmpSocket: string;
  consoleLog: string;
  pidFile: string;
  /** a tap device in the namespace QEMU runs in, and the guest NIC's MAC */
  network?: { tapName: string; mac: string };
  /** wait for `migrate-incoming` instead of booting */
  incoming: boolean;
}

/** Translation-cache size under TCG, MiB: QEMU's default (1 GiB) would let every clone grow that much. */
export const TCG_CACHE_MB = 64;

/** The argv (after the binary) of the VM. */
export function qemuArguments(layout: MachineLayout): string[] {
  const args = [
    '-name', `airlock-${layout.sandboxId}`,
    '-M', 'microvm,memory-backend=guest-ram,rtc=on',
    '-accel', layout.accelerator === 'tcg' ? `tcg,tb-size=${TCG_CACHE_MB}` : 'kvm',
    '-cpu', layout.accelerator === 'tcg' ? 'max' : 'host',
    '-smp', String(Math.max(1, Math.ceil(layout.cpus))),
    '-m', `${layout.memoryMb}M`,
    '-object', memoryBackend(layout.memory, layout.memoryMb),
    '-nodefaults', '-no-user-config', '-display', 'none', '-no-reboot',
    // Defense in depth for the QEMU process itself; `spawn` stays allowed: migration to a file runs `cat`.
    '-sandbox', 'on,obsolete=deny,elevateprivileges=deny,resourcecontrol=deny',
    '-chardev', `file,id=console,path=${layout.consoleLog}`, '-serial', 'chardev:console',
    '-kernel', layout.kernelPath,
    '-initrd', layout.initramfsPath,
    '-append', `console=ttyS0 quiet panic=-1 reboot=t pci=off tsc_early_khz=${layout.tscKhz}`,
    '-drive', `id=root,file=${layout.rootfsImage},if=none,format=raw,readonly=on`,
    '-device', 'virtio-blk-device,drive=root,serial=airlock-root',
    '-drive', `id=disk,file=${layout.diskImage},if=none,format=raw,cache=writeback,discard=unmap`,
    '-device', 'virtio-blk-device,drive=disk,serial=airlock-disk',
    '-device', 'virtio-serial-device',
    '-chardev', `socket,id=agent,path=${layout.agentSocket},server=on,wait=off`,
    '-device', 'virtserialport,chardev=agent,name=airlock',
    '-qmp', `unix:${layout.qmpSocket},server=on,wait=off`,
    '-pidfile', layout.pidFile,
  ];
  if (layout.network) {
    args.push('-netdev', `tap,id=net,ifname=${layout.network.tapName},script=no,downscript=no`, '-device', `virtio-net-device,netdev=net,mac=${layout.network.mac}`);
  }
  if (layout.incoming) args.push('-incoming', 'defer');
  return args;
}

function memoryBackend(memory: GuestMemory, memoryMb: number): string {
  if (memory.kind === 'anonymous') return `memory-backend-ram,id=guest-ram,size=${memoryMb}M`;
  return `memory-backend-file,id=guest-ram,size=${memoryMb}M,mem-path=${memory.path},share=${memory.kind === 'shared-file' ? 'on' : 'off'}`;
}
