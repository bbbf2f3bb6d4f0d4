/**
 * Hostile suite: sandbox escapes. From inside a session, as root of its
 * sandbox: devices, mounts, ptrace of pid 1, raw and packet sockets, the
 * kernel's privileged interfaces, /proc/sys and /sys, capabilities, chroot,
 * the read-only toolbox under /.airlock, the shared image rootfs, the host's
 * loopback and addresses, and the Airlock API through the egress gateway.
 * Each attempt is one row of a probe's JSON; every probe has a positive
 * control (a call of the same kind that works) so that a probe that did
 * nothing fails. Network attempts target only loopback, the host's own
 * addresses and the session's gateway.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, realpathSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { TestInstallation, TEST_IMAGES_DIR } from '../support/test-installation.js';
import { HostileApi, hostMarker, needle, readOnlyBindSources, sha256OfFile, type HostMarker } from '../support/hostile-kit.js';
import { ESCAPE_PRELUDE, GATEWAY_REACH, IMAGE_OVERWRITE, KERNEL_SURFACE, LOOPBACK_REACH, SECRET_SCAN, TOOLBOX_TAMPERING } from '../support/escape-probes.js';


/** Capabilities a session's processes may hold: CAP_KILL, CAP_NET_BIND_SERVICE, CAP_AUDIT_WRITE (runsc's defaults, without SYS_ADMIN). */
const ALLOWED_CAPABILITIES = (1n << 5n) | (1n << 10n) | (1n << 29n);

interface KernelSurface {
  'control: getpid through syscall()': string;
  devices: { dev: string[]; sysBlock: string[]; nodes: Record<string, { mknod: string; open: string }> };
  mounts: Record<string, string>;
  mountsUnchanged: boolean;
  probeMountEmpty: boolean;
  ptrace: Record<string, string>;
  sockets: Record<string, string>;
  socketsInUserNamespace: { unshare: string; entered: string; interfaces: string[]; 'icmp to the host': Record<string, string> } & Record<string, unknown>;
  kernel: Record<string, string>;
  procSys: Record<string, string>;
  hostnameUnchanged: boolean;
  sys: Record<string, string>;
  capabilities: Record<string, string>;
  chroot: Record<string, string | string[]>;
}

describe('hostile: a session cannot get out of its sandbox', { timeout: 900_000 }, () => {
  let installation: TestInstallation;
  let api: HostileApi;
  let marker: HostMarker;
  let probe = '';
  let toolbox = { source: '', destination: '' };
  let surface: KernelSurface;
  const hostAddresses = Object.values(networkInterfaces())
    .flatMap((list) => list ?? [])
    .filter((entry) => !entry.internal && entry.family === 'IPv4')
    .map((entry) => entry.address);

  const python = <T>(sessionId: string, program: string, input: Record<string, unknown> = {}): Promise<T> => api.python<T>(sessionId, `${ESCAPE_PRELUDE}\n${program}`, input);
  /** Every named attempt must have been made and refused (anything but `ok ...`). */
  const assertRefused = (rows: Record<string, unknown>, names: string[], what: string): void => {
    for (const row of names) {
      const outcome = rows[row];
      assert.equal(typeof outcome, 'string', `${what}: the attempt "${row}" was not made (${JSON.stringify(rows)})`);
      assert.doesNotMatch(String(outcome), /^ok/, `${what}: "${row}" went through: ${String(outcome)}`);
    }
  };
  /** After tampering, the session must still work, or say that it does not (not `running` with every call failing). */
  const assertUsableOrReported = async (sessionId: string, what: string): Promise<void> => {
    const next = await api.tool(sessionId, 'exec', { command: 'echo alive', timeoutMs: 30_000 });
    const read = await api.tool(sessionId, 'files.read', { path: '/etc/hostname' });
    const view = await api.session(sessionId);
    const usable = next.code === 'ok' && next.result['stdout'] === 'alive\n' && read.code === 'ok';
    const reported = view.state !== 'running' && Boolean(view.failure?.message);
    assert.ok(usable || reported, `${what}: the session is ${view.state} but an exec answered ${next.code} exit ${String(next.result['exitCode'])} ${String(next.result['stderr'] ?? next.message).slice(0, 200)}, a read ${read.code} ${read.message.slice(0, 200)}`);
  };

  before(async () => {
    installation = await TestInstallation.start();
    api = new HostileApi(installation);
    marker = hostMarker();
    probe = await api.createSession({ version: 1, idle: { keepAwake: true } });
    const bind = (await readOnlyBindSources(installation, api, probe)).find((mount) => mount.destination.startsWith('/.airlock/'));
    assert.ok(bind, 'the sandbox has a read-only toolbox under /.airlock');
    toolbox = { source: realpathSync(bind.source), destination: bind.destination };
    surface = await python<KernelSurface>(probe, KERNEL_SURFACE, { toolbox: toolbox.destination, hostAddresses, marker: marker.path });
    assert.match(surface['control: getpid through syscall()'], /^ok \d+/, 'control: raw syscalls work from the probe');
  });

  after(async () => {
    marker?.dispose();
    await installation?.destroy();
  });

  it('has no block device in /dev or /sys/block', () => {
    const blockLike = surface.devices.dev.filter((name) => /^(loop|sd|vd|xvd|hd|nvme|mmcblk|dm-|md\d|ram|mapper|disk|mem$|kmem|port$|sg\d|kmsg)/.test(name));
    assert.deepEqual(blockLike, [], `/dev: ${surface.devices.dev.join(' ')}`);
    assert.ok(surface.devices.dev.includes('null') && surface.devices.dev.includes('zero'), 'control: /dev was listed');
    assert.deepEqual(surface.devices.sysBlock, []);
  });

  it('opens nothing through a device node it makes itself (mknod of loop0, vda, sda, mem, kmsg)', () => {
    for (const [node, outcome] of Object.entries(surface.devices.nodes)) {
      assert.notEqual(outcome.mknod, undefined, `${node} was attempted`);
      assert.doesNotMatch(outcome.open, /^ok/, `${node}: ${JSON.stringify(outcome)}`);
    }
  });

  it('cannot mount anything: tmpfs, a bind of /, proc, or remount / and /sys read-write', () => {
    assertRefused(surface.mounts, ['mount tmpfs', 'bind /', 'mount proc', 'remount / read-write', 'remount /sys read-write'], 'mount(2)');
    assert.ok(surface.mountsUnchanged, 'the mount table is unchanged');
    assert.ok(surface.probeMountEmpty, 'nothing appeared under the mount point');
  });

  it('cannot unmount /workspace, /proc or the toolbox, pivot_root, or enter another mount namespace', () => {
    assertRefused(surface.mounts, ['umount /workspace', 'umount /proc', 'umount the toolbox', 'pivot_root', 'unshare a mount namespace without a user namespace', "setns into pid 1's mount namespace"], 'namespaces');
  });

  it('cannot ptrace pid 1 or read its memory (control: it can trace its own child)', () => {
    assert.equal(surface.ptrace['control: attach to own child'], 'ok', 'control: ptrace works on the probe\'s own child');
    assertRefused(surface.ptrace, ['attach to pid 1', 'seize pid 1', 'read /proc/1/mem', 'process_vm_readv pid 1'], 'ptrace');
  });

  it('cannot open raw or packet sockets', () => {
    assertRefused(surface.sockets, ['raw', 'packet', 'raw ipv6'], 'sockets');
  });

  it('in a user namespace of its own, raw sockets reach only its loopback, never the host', () => {
    const inside = surface.socketsInUserNamespace;
    assert.equal(inside.unshare, 'EPERM', 'the seccomp filter of the agent refuses unshare(CLONE_NEWUSER)');
    assert.equal(inside.entered, 'ok clone3', 'control: the probe entered a user namespace all the same (clone3, whose flags no filter sees)');
    assert.deepEqual(inside.interfaces, ['lo'], 'the only interface is the session\'s loopback');
    assertRefused(inside['icmp to the host'], [...hostAddresses, '10.200.0.1'], 'ICMP to the host');
  });

  it('bpf(2) is refused', () => assertRefused(surface.kernel, ['bpf'], 'bpf'));
  it('perf_event_open(2) is refused', () => assertRefused(surface.kernel, ['perf_event_open'], 'perf'));
  it('the kernel keyrings (keyctl, add_key) are refused', () => assertRefused(surface.kernel, ['keyctl', 'add_key'], 'keyrings'));
  it('kexec and reboot are refused, and the machine keeps running', async () => {
    assertRefused(surface.kernel, ['kexec_load', 'kexec_file_load', 'reboot'], 'kexec/reboot');
    assert.equal(await api.sh(probe, 'echo still-up'), 'still-up\n');
  });
  it('kernel modules cannot be loaded or removed', () => assertRefused(surface.kernel, ['init_module', 'finit_module', 'delete_module'], 'modules'));
  it('open_by_handle_at(2) (the "shocker" escape) is refused', () => assertRefused(surface.kernel, ['open_by_handle_at'], 'open_by_handle_at'));
  it('io_uring is refused', () => assertRefused(surface.kernel, ['io_uring_setup'], 'io_uring'));
  it('userfaultfd(2) is refused', () => assertRefused(surface.kernel, ['userfaultfd'], 'userfaultfd'));
  it('host-wide controls (swapon, settimeofday, iopl) are refused', () => assertRefused(surface.kernel, ['swapon', 'settimeofday', 'iopl'], 'host controls'));

  it('cannot write /proc/sys or /proc/sysrq-trigger, and its hostname stays', () => {
    assertRefused(surface.procSys, Object.keys(surface.procSys), '/proc/sys');
    assert.equal(Object.keys(surface.procSys).length, 6);
    assert.ok(surface.hostnameUnchanged);
  });

  it('cannot write /sys', () => {
    assertRefused(surface.sys, Object.keys(surface.sys), '/sys');
    assert.equal(Object.keys(surface.sys).length, 4);
  });

  it('holds no capability beyond kill, bind to low ports and audit write', () => {
    for (const key of ['CapPrm', 'CapEff', 'CapBnd']) {
      const value = surface.capabilities[key] ?? '';
      assert.match(value, /^[0-9a-f]{16}$/, `${key} was read: ${JSON.stringify(surface.capabilities)}`);
      assert.equal(BigInt(`0x${value}`) & ~ALLOWED_CAPABILITIES, 0n, `${key} = ${value} holds more than kill, net_bind_service and audit_write`);
    }
    assert.equal(BigInt(`0x${surface.capabilities['CapAmb'] || '0'}`), 0n);
  });

  it('a chroot, even the classic escape from a user namespace, stays inside the sandbox', () => {
    const chroot = surface.chroot;
    assert.doesNotMatch(String(chroot['chroot without a user namespace']), /^ok/, 'chroot needs a user namespace');
    assert.equal(chroot['entered'], 'ok clone3', `control: the probe is in a user namespace of its own (unshare is refused by seccomp): ${JSON.stringify(chroot)}`);
    assert.equal(chroot['chroot into the jail'], 'ok', `control: the escape was attempted: ${JSON.stringify(chroot)}`);
    const imageRoot = new Set(readdirSync(join(TEST_IMAGES_DIR, 'debian-bookworm', 'rootfs')));
    const hostOnlyEntries = readdirSync('/').filter((entry) => !imageRoot.has(entry) && entry !== 'workspace' && entry !== '.airlock');
    const seen = chroot['root'] as string[];
    assert.deepEqual(seen.filter((entry) => hostOnlyEntries.includes(entry)), [], `the escaped root shows the host's / (${seen.join(' ')})`);
    assert.doesNotMatch(String(chroot['marker']), /^ok/, 'the host-only marker is not reachable');
  });

  it('cannot write, replace, move or remount the read-only toolbox under /.airlock, and the host file is unchanged', async () => {
    const before = sha256OfFile(toolbox.source);
    const tampering = await python<Record<string, unknown> & { 'in a user and mount namespace': Record<string, string> }>(probe, TOOLBOX_TAMPERING, { toolbox: toolbox.destination });
    assert.match(String(tampering['control: read it']), /^ok/, 'control: the toolbox is there and readable');
    assertRefused(tampering, ['write into it', 'truncate it', 'unlink it', 'rename it away', 'chmod it', 'bind another file over it', 'remount it read-write'], 'toolbox');
    const inNamespace = tampering['in a user and mount namespace'];
    assert.equal(inNamespace['unshare'], 'EPERM', 'the seccomp filter of the agent refuses unshare(CLONE_NEWUSER|CLONE_NEWNS)');
    assert.equal(inNamespace['entered'], 'ok clone3', 'control: the probe entered a user and mount namespace all the same (clone3)');
    assertRefused(inNamespace, ['write into it', 'write after the remount'], 'toolbox from a user namespace');
    assert.equal(sha256OfFile(toolbox.source), before, `${toolbox.source} on the host is unchanged`);
    assert.equal(await api.sh(probe, 'echo toolbox-still-works'), 'toolbox-still-works\n');
  });

  it('moving the directory that holds the toolbox does not wedge the session', async () => {
    const victim = await api.createSession({ version: 1, idle: { keepAwake: true } });
    const folder = toolbox.destination.slice(0, toolbox.destination.lastIndexOf('/'));
    await api.tool(victim, 'exec', { command: `mv '${folder}' '${folder}-moved'`, timeoutMs: 30_000 });
    await assertUsableOrReported(victim, `after mv ${folder}`);
  });

  it('replacing /dev/null does not wedge the session', async () => {
    const victim = await api.createSession({ version: 1, idle: { keepAwake: true } });
    await api.tool(victim, 'exec', { command: 'mv /workspace /dev/null 2>/dev/null; rm -f /dev/null; echo x > /dev/null', timeoutMs: 30_000 });
    await assertUsableOrReported(victim, 'after replacing /dev/null');
  });

  it('stopping pid 1 does not wedge the session', async () => {
    const victim = await api.createSession({ version: 1, idle: { keepAwake: true } });
    await api.tool(victim, 'exec', { command: 'kill -STOP 1', timeoutMs: 30_000 });
    await assertUsableOrReported(victim, 'after kill -STOP 1');
  });

  it('overwriting image files in the session leaves the shared image on the host, and other sessions, unchanged', async () => {
    const rootfs = join(TEST_IMAGES_DIR, 'debian-bookworm', 'rootfs');
    const files = ['/etc/passwd', '/usr/lib/os-release', '/usr/bin/ls', '/etc/hostname'];
    const before = Object.fromEntries(files.map((file) => [file, sha256OfFile(realpathSync(join(rootfs, file)))]));
    const writer = await api.createSession();
    const clobbered = await python<Record<string, string>>(writer, IMAGE_OVERWRITE, { paths: files });
    for (const file of files) assert.equal(clobbered[file], 'ok', `control: the session may change its own ${file}: ${clobbered[file]}`);
    assert.equal(await api.sh(writer, 'cat /etc/passwd'), 'clobbered by a session\n', 'control: the writer sees its own change');
    for (const file of files) assert.equal(sha256OfFile(realpathSync(join(rootfs, file))), before[file], `${file} of the shared image on the host`);
    const witness = await api.createSession();
    assert.match(await api.sh(witness, 'cat /etc/passwd'), /^root:x:0:0:/, 'a new session sees the image as it was');
    await Promise.all([api.terminate(writer), api.terminate(witness)]);
  });

  it('writing through /proc/PID/exe of every process it can see (the runc CVE-2019-5736 pattern) changes nothing on the host', async () => {
    const runsc = realpathSync('/usr/bin/runsc');
    const before = { runsc: sha256OfFile(runsc), toolbox: sha256OfFile(toolbox.source) };
    const writer = await api.createSession();
    // A command in flight, so that the driver's own helpers are among the processes the probe sees.
    const inFlight = api.tool(writer, 'exec', { command: 'sleep 3; echo done', timeoutMs: 30_000 });
    const result = await python<{ exes: Record<string, string> }>(writer, IMAGE_OVERWRITE, { paths: [] });
    assert.ok(Object.keys(result.exes).length >= 2, `control: the probe saw processes: ${JSON.stringify(result.exes)}`);
    await inFlight;
    assert.equal(sha256OfFile(runsc), before.runsc, `${runsc} on the host is unchanged`);
    assert.equal(sha256OfFile(toolbox.source), before.toolbox, `${toolbox.source} on the host is unchanged`);
    await api.terminate(writer);
  });

  it('reaches neither the API\'s port on the host\'s loopback nor the host\'s addresses (control: its own listener on that port answers)', async () => {
    const own = needle('own-listener');
    await api.tool(probe, 'exec', {
      argv: ['python3', '-c', `import socket,sys\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\ns.bind(('127.0.0.1',${installation.port}))\ns.listen(4)\nwhile True:\n  c,_=s.accept(); c.recv(100); c.sendall(sys.argv[1].encode()); c.close()`, own.value],
      detach: true,
    });
    const hosts = ['127.0.0.1', '::1', '10.200.0.1', ...hostAddresses];
    let reach: { tcp: Record<string, string>; interfaces: string[] } = { tcp: {}, interfaces: [] };
    for (let tries = 0; tries < 50; tries++) {
      reach = await python(probe, LOOPBACK_REACH, { hosts, port: installation.port });
      if (reach.tcp[`127.0.0.1:${installation.port}`]?.startsWith('answered')) break;
    }
    assert.equal(reach.tcp[`127.0.0.1:${installation.port}`], `answered: ${own.value}`, 'control: 127.0.0.1 is the session\'s own loopback, where its own listener answers');
    for (const host of hosts.slice(1)) assert.match(reach.tcp[`${host}:${installation.port}`] ?? '', /^failed/, `${host}:${installation.port} from the session`);
    assert.deepEqual(reach.interfaces, ['lo']);
  });

  it('reaches the API through its egress gateway by no route, even with the API\'s address in its allowlist', async () => {
    const port = installation.port;
    const networked = await api.createSession({ version: 1, network: { allowedDomains: [`127.0.0.1:${port}`, `localhost:${port}`, ...hostAddresses.map((address) => `${address}:${port}`)] } });
    const targets = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `0.0.0.0:${port}`, `2130706433:${port}`, `127.1:${port}`, ...hostAddresses.map((address) => `${address}:${port}`)];
    const reach = await python<Record<string, string>>(networked, GATEWAY_REACH, { port, targets, direct: ['127.0.0.1', ...hostAddresses] });
    const gateway = reach['gateway'] ?? '';
    assert.match(gateway, /^\d+\.\d+\.\d+\.\d+$/, 'control: the session has a gateway');
    const rows = Object.entries(reach).filter(([row]) => row !== 'gateway');
    assert.equal(rows.length, targets.length * 3 + 1 + hostAddresses.length);
    for (const [row, outcome] of rows) {
      assert.doesNotMatch(outcome, /UNAUTHORIZED|"ok":true|HTTP\/1\.[01] 2\d\d/, `${row} reached the API: ${outcome}`);
      assert.match(outcome, /^failed|^answered: HTTP\/1\.[01] [45]\d\d/, `${row}: ${outcome}`);
    }
    assert.ok(rows.some(([, outcome]) => /x-airlock-denied/i.test(outcome)), 'control: the gateway itself answered the refusals');
    const direct = await python<Record<string, string>>(networked, GATEWAY_REACH, { port, targets: [], direct: [gateway] });
    assert.match(direct[`direct ${gateway}`] ?? '', /^failed/, 'the gateway\'s address on the API\'s port is closed');
    await api.terminate(networked);
  });

  it('reaches no service of the host on the host\'s own address through its gateway, even when its contract lists that address', async (t) => {
    const hostAddress = hostAddresses[0];
    if (!hostAddress) {
      t.skip('this host has no non-loopback IPv4 address to listen on');
      return;
    }
    // A stand-in for a service of the host (an sshd, an API bound to every interface): it counts who reaches it.
    let reached = 0;
    const connections = new Set<Socket>();
    const service = createServer((socket) => {
      reached += 1;
      connections.add(socket);
      socket.on('error', () => undefined);
      socket.end('host-service-banner');
    });
    await new Promise<void>((resolve) => service.listen(0, hostAddress, resolve));
    const port = (service.address() as AddressInfo).port;
    try {
      const networked = await api.createSession({ version: 1, network: { allowedDomains: [`${hostAddress}:${port}`] } });
      const target = `${hostAddress}:${port}`;
      const reach = await python<Record<string, string>>(networked, GATEWAY_REACH, { port, targets: [target], direct: [hostAddress] });
      assert.match(reach[`CONNECT ${target}`] ?? '', /^answered: HTTP|^failed/, 'control: the gateway was asked');
      for (const [row, outcome] of Object.entries(reach)) assert.doesNotMatch(outcome, /host-service-banner/, `${row} reached the host's service: ${outcome}`);
      assert.equal(reached, 0, `the host's service on ${target} was reached ${reached} times from the session`);
      await api.terminate(networked);
    } finally {
      // A tunnel the gateway keeps open would hold close() forever.
      for (const socket of connections) socket.destroy();
      await new Promise((resolve) => service.close(resolve));
    }
  });

  it('finds the API token nowhere in the sandbox: environments, command lines, mount table, files', async () => {
    const control = needle('scan-control');
    await api.write(probe, '/workspace/scan-control.txt', control.value);
    const token = installation.token;
    const scan = await python<{ scanned: number; hits: string[] }>(probe, SECRET_SCAN, { needles: { token: [token.slice(0, 8), token.slice(8)], dataDir: [installation.dataDir.slice(0, 8), installation.dataDir.slice(8)], control: control.halves } });
    assert.ok(scan.scanned > 100, `the scan read the filesystem (${scan.scanned} files)`);
    assert.ok(scan.hits.includes('/workspace/scan-control.txt: control'), `control: the scan finds a planted needle (${scan.hits.join('; ')})`);
    const leaks = scan.hits.filter((hit) => !hit.endsWith(': control'));
    assert.deepEqual(leaks, [], 'neither the token nor the host path of the data dir is visible inside');
  });
});
