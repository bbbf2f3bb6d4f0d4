/**
 * Unit tests of the microvm driver's pure parts: the guest protocol's framing
 * (what a reconnect or a restore leaves on the wire must never be read as a
 * frame), the initramfs archive (unpacked by the real busybox cpio), and the
 * QEMU command line for each kind of guest RAM.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { encodeExec, encodeFrame, encodeIdentity, FrameReader, FrameType, SYNC_MAGIC } from '../../../src/drivers/qemu/guest-protocol.js';
import { newcArchive } from '../../../src/drivers/qemu/newc-archive.js';
import { qemuArguments, type MachineLayout } from '../../../src/drivers/qemu/qemu-command-line.js';

describe('guest protocol framing', () => {
  it('skips everything before the sync magic, then cuts frames across arbitrary chunk borders', () => {
    const reader = new FrameReader();
    const stale = Buffer.concat([Buffer.from([0xff, 0xff, 0x00, 0x00, 0x42]), encodeFrame(FrameType.stdout, 9, Buffer.from('old'))]);
    const wire = Buffer.concat([stale, SYNC_MAGIC, encodeFrame(FrameType.helloReply, 0, Buffer.from('nonce123agent')), encodeFrame(FrameType.exited, 3, Buffer.from([2, 0, 0, 0]))]);
    const frames = [];
    for (let offset = 0; offset < wire.length; offset += 3) frames.push(...reader.push(wire.subarray(offset, offset + 3)));
    assert.deepEqual(frames.map((frame) => [frame.type, frame.stream, frame.payload.toString('hex')]), [
      [FrameType.helloReply, 0, Buffer.from('nonce123agent').toString('hex')],
      [FrameType.exited, 3, '02000000'],
    ]);
  });

  it('drops back to searching for the magic when a length is out of bounds', () => {
    const reader = new FrameReader();
    const bogus = Buffer.alloc(9);
    bogus.writeUInt32LE(0x7fffffff, 0);
    const frames = reader.push(Buffer.concat([SYNC_MAGIC, bogus, Buffer.from('junk'), SYNC_MAGIC, encodeFrame(FrameType.ok, 5)]));
    assert.deepEqual(frames.map((frame) => [frame.type, frame.stream]), [[FrameType.ok, 5]]);
  });

  it('encodes exec and identity requests as the agent reads them', () => {
    const exec = encodeExec({ argv: ['sh', '-c', 'echo hi'], cwd: '/tmp', env: { A: '1', B: 'two words' }, stdin: true });
    assert.equal(exec.readUInt32LE(0), 1, 'stdin flag');
    assert.equal(exec.readUInt32LE(4), 3);
    assert.equal(exec.readUInt32LE(8), 2);
    assert.deepEqual(exec.subarray(12).toString().split('\0'), ['/tmp', 'sh', '-c', 'echo hi', 'A=1', 'B=two words', '']);
    const identity = encodeIdentity({ hostname: 'branch-1', machineId: 'a'.repeat(32), entropy: new Uint8Array(64).fill(7) });
    assert.equal(identity.readUInt32LE(0), 8);
    assert.equal(identity.subarray(4, 12).toString(), 'branch-1');
    assert.equal(identity.readUInt32LE(12), 32);
    assert.equal(identity.length, 4 + 8 + 4 + 32 + 64);
    const entropyOnly = encodeIdentity({ entropy: new Uint8Array(32) });
    assert.deepEqual([entropyOnly.readUInt32LE(0), entropyOnly.readUInt32LE(4), entropyOnly.length], [0, 0, 40], 'a resume keeps hostname and machine id');
  });
});

describe('initramfs archive', () => {
  it('is a newc archive busybox cpio unpacks, with modes, links and binary content, and two of them concatenate', () => {
    const dir = mkdtempSync('/tmp/airlock-newc-');
    try {
      const binary = Buffer.from([...Array(256).keys()]);
      const first = newcArchive([
        { kind: 'directory', path: 'bin' },
        { kind: 'file', path: 'bin/tool', content: binary, mode: 0o755 },
        { kind: 'symlink', path: 'bin/alias', target: 'tool' },
      ]);
      const second = newcArchive([{ kind: 'directory', path: 'airlock' }, { kind: 'file', path: 'airlock/config', content: Buffer.from('A=1\n') }]);
      assert.equal(first.length % 512, 0, 'padded for the next archive');
      for (const archive of [first, second]) execFileSync('busybox', ['cpio', '-i', '-d', '-m'], { cwd: dir, input: archive, stdio: ['pipe', 'ignore', 'ignore'] });
      assert.ok(readFileSync(join(dir, 'bin/tool')).equals(binary));
      assert.equal(statSync(join(dir, 'bin/tool')).mode & 0o777, 0o755);
      assert.equal(readlinkSync(join(dir, 'bin/alias')), 'tool');
      assert.equal(readFileSync(join(dir, 'airlock/config'), 'utf8'), 'A=1\n');
      assert.throws(() => newcArchive([{ kind: 'directory', path: '/absolute' }]));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('QEMU command line', () => {
  const layout: MachineLayout = {
    sandboxId: 'vm-ses_x-g1',
    accelerator: 'tcg',
    cpus: 1.5,
    memoryMb: 256,
    memory: { kind: 'shared-file', path: '/state/memory.raw' },
    kernelPath: '/k/vmlinux',
    initramfsPath: '/state/initramfs.cpio',
    tscKhz: 2_600_000,
    rootfsImage: '/cache/image.ext4',
    diskImage: '/disks/ses_x/disk.ext4',
    agentSocket: '/run/a/agent.sock',
    qmpSocket: '/run/a/qmp.sock',
    consoleLog: '/state/console.log',
    pidFile: '/state/qemu.pid',
    incoming: false,
  };
  const argAfter = (args: string[], flag: string): string[] => args.flatMap((arg, index) => (args[index - 1] === flag ? [arg] : []));

  it('maps guest RAM as the layout says, and restores wait for their stream', () => {
    assert.deepEqual(argAfter(qemuArguments(layout), '-object'), ['memory-backend-file,id=guest-ram,size=256M,mem-path=/state/memory.raw,share=on']);
    assert.deepEqual(argAfter(qemuArguments({ ...layout, memory: { kind: 'private-file', path: '/img/memory.raw' } }), '-object'), ['memory-backend-file,id=guest-ram,size=256M,mem-path=/img/memory.raw,share=off']);
    assert.deepEqual(argAfter(qemuArguments({ ...layout, memory: { kind: 'anonymous' } }), '-object'), ['memory-backend-ram,id=guest-ram,size=256M']);
    assert.ok(!qemuArguments(layout).includes('-incoming'));
    assert.deepEqual(argAfter(qemuArguments({ ...layout, incoming: true }), '-incoming'), ['defer']);
  });

  it('boots under TCG with the host TSC rate and a bounded translation cache; the image disk read-only; a NIC only when networked', () => {
    const args = qemuArguments(layout);
    assert.deepEqual(argAfter(args, '-accel'), ['tcg,tb-size=64']);
    assert.deepEqual(argAfter(args, '-smp'), ['2'], 'whole vCPUs, rounded up');
    assert.match(argAfter(args, '-append')[0] ?? '', /tsc_early_khz=2600000/);
    assert.ok(argAfter(args, '-drive').some((drive) => drive.startsWith('id=root,file=/cache/image.ext4') && drive.includes('readonly=on')));
    assert.ok(!args.includes('-netdev'));
    const networked = qemuArguments({ ...layout, accelerator: 'kvm', network: { tapName: 'tap0', mac: '52:54:00:01:02:03' } });
    assert.deepEqual(argAfter(networked, '-accel'), ['kvm']);
    assert.deepEqual(argAfter(networked, '-cpu'), ['host']);
    assert.deepEqual(argAfter(networked, '-netdev'), ['tap,id=net,ifname=tap0,script=no,downscript=no']);
  });
});
