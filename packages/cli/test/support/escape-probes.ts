/**
 * The python programs the sandbox-escape test runs inside a session. Each
 * prints one JSON object: the outcome of every attempt by name (`ok ...`
 * when the kernel of the sandbox let it through, else the errno name), so
 * the test can assert each on its own row. Every table carries a positive
 * control (a call of the same kind that must work), so a probe that did
 * nothing cannot pass.
 */

/** Helpers shared by every probe: `args` is the JSON argument. */
export const ESCAPE_PRELUDE = String.raw`
import ctypes, errno, json, os, socket, stat, struct, subprocess, sys, time
args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def name(number):
    return errno.errorcode.get(number, str(number))
def sc(number, *values):
    converted = [ctypes.c_long(v) if isinstance(v, int) else v for v in values]
    result = libc.syscall(ctypes.c_long(number), *converted)
    return 'ok %d' % result if result >= 0 else name(ctypes.get_errno())
def attempt(action):
    try:
        value = action()
        return 'ok' if value is None else 'ok ' + str(value)
    except OSError as e:
        return name(e.errno) if e.errno else type(e).__name__
    except Exception as e:
        return type(e).__name__ + ': ' + str(e)
def clone3(flags):
    # A fork by clone3(2) with namespace flags: a seccomp filter cannot look at them (they are in memory).
    clone_args = (ctypes.c_uint64 * 11)()
    clone_args[0] = flags
    clone_args[4] = 17  # exit_signal: SIGCHLD
    pid = libc.syscall(ctypes.c_long(435), ctypes.byref(clone_args), ctypes.c_size_t(88))
    if pid < 0:
        raise OSError(ctypes.get_errno(), 'clone3')
    return pid
def in_child(action, clone_flags=0):
    # Runs action() in a forked child (so a namespace it enters ends with it) and returns its JSON result.
    read_end, write_end = os.pipe()
    try:
        pid = clone3(clone_flags) if clone_flags else os.fork()
    except OSError as e:
        return {'error': name(e.errno)}
    if pid == 0:
        os.close(read_end)
        try:
            out = action()
        except Exception as e:
            out = {'error': type(e).__name__ + ': ' + str(e)}
        os.write(write_end, json.dumps(out).encode())
        os._exit(0)
    os.close(write_end)
    data = b''
    while True:
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        data += chunk
    os.waitpid(pid, 0)
    return json.loads(data or b'{}')
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
def in_namespaces(action, flags):
    # Runs action() in a child in new namespaces, as an attacker would get them: unshare(2), and where
    # that is refused (the agent's seccomp filter), a child made by clone3(2) with the flags.
    # 'unshare' is what unshare answered, 'entered' how the child got in (or why it did not).
    def by_unshare():
        entered = sc(272, flags)
        if not entered.startswith('ok'):
            return {'unshare': entered}
        result = action()
        result.update({'unshare': entered, 'entered': 'ok unshare'})
        return result
    result = in_child(by_unshare)
    if 'entered' in result:
        return result
    refused = result.get('unshare')
    result = in_child(action, flags)
    result.update({'unshare': refused, 'entered': result.get('error', 'ok clone3')})
    return result
def mount(source, target, fstype, flags):
    result = libc.mount(source.encode() if source else None, target.encode(), fstype.encode() if fstype else None, ctypes.c_ulong(flags), None)
    return 'ok' if result == 0 else name(ctypes.get_errno())
def umount(target):
    return 'ok' if libc.umount2(target.encode(), 0) == 0 else name(ctypes.get_errno())
`;

/** Devices, mounts, ptrace, sockets, kernel interfaces, /proc/sys and /sys, capabilities, chroot. */
export const KERNEL_SURFACE = String.raw`
out = {}
mountinfo = open('/proc/self/mountinfo').read()
out['control: getpid through syscall()'] = sc(39)

def node(path, kind, major, minor):
    made = attempt(lambda: os.mknod(path, kind | 0o600, os.makedev(major, minor)))
    def first_bytes():
        fd = os.open(path, os.O_RDONLY)
        try:
            return len(os.read(fd, 4096))
        finally:
            os.close(fd)
    return {'mknod': made, 'open': attempt(first_bytes) if made == 'ok' else 'not made'}
out['devices'] = {
    'dev': sorted(os.listdir('/dev')),
    'sysBlock': sorted(os.listdir('/sys/block')) if os.path.isdir('/sys/block') else [],
    'nodes': {
        'loop0 (block 7,0)': node('/tmp/probe-loop0', stat.S_IFBLK, 7, 0),
        'vda (block 253,0)': node('/tmp/probe-vda', stat.S_IFBLK, 253, 0),
        'sda (block 8,0)': node('/tmp/probe-sda', stat.S_IFBLK, 8, 0),
        'mem (char 1,1)': node('/tmp/probe-mem', stat.S_IFCHR, 1, 1),
        'kmsg (char 1,11)': node('/tmp/probe-kmsg', stat.S_IFCHR, 1, 11),
    },
}

os.makedirs('/mnt/probe', exist_ok=True)
out['mounts'] = {
    'mount tmpfs': mount('none', '/mnt/probe', 'tmpfs', 0),
    'bind /': mount('/', '/mnt/probe', None, MS_BIND),
    'mount proc': mount('proc', '/mnt/probe', 'proc', 0),
    'remount / read-write': mount(None, '/', None, MS_REMOUNT),
    'remount /sys read-write': mount(None, '/sys', None, MS_REMOUNT),
    'umount /workspace': umount('/workspace'),
    'umount /proc': umount('/proc'),
    'umount the toolbox': umount(args['toolbox']),
    'pivot_root': sc(155, ctypes.c_char_p(b'/mnt/probe'), ctypes.c_char_p(b'/mnt/probe')),
    'unshare a mount namespace without a user namespace': sc(272, CLONE_NEWNS),
    'setns into pid 1\'s mount namespace': attempt(lambda: os.setns(os.open('/proc/1/ns/mnt', os.O_RDONLY), CLONE_NEWNS)) if hasattr(os, 'setns') else sc(308, os.open('/proc/1/ns/mnt', os.O_RDONLY), CLONE_NEWNS),
}
out['mountsUnchanged'] = open('/proc/self/mountinfo').read() == mountinfo
out['probeMountEmpty'] = os.listdir('/mnt/probe') == []

child = os.fork()
if child == 0:
    time.sleep(60)
    os._exit(0)
attached = libc.ptrace(16, child, 0, 0)
out['ptrace'] = {'control: attach to own child': 'ok' if attached == 0 else name(ctypes.get_errno())}
if attached == 0:
    os.waitpid(child, 0)
    libc.ptrace(17, child, 0, 0)
os.kill(child, 9)
os.waitpid(child, 0)
out['ptrace']['attach to pid 1'] = 'ok' if libc.ptrace(16, 1, 0, 0) == 0 else name(ctypes.get_errno())
out['ptrace']['seize pid 1'] = 'ok' if libc.ptrace(0x4206, 1, 0, 0) == 0 else name(ctypes.get_errno())
out['ptrace']['read /proc/1/mem'] = attempt(lambda: len(open('/proc/1/mem', 'rb').read(16)))
buffer = ctypes.create_string_buffer(64)
local = (ctypes.c_void_p * 2)(ctypes.cast(buffer, ctypes.c_void_p), 64)
remote = (ctypes.c_void_p * 2)(0x400000, 64)
out['ptrace']['process_vm_readv pid 1'] = sc(310, 1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)

def sockets():
    result = {}
    for label, family, kind, protocol in [('raw', socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP), ('packet', 17, socket.SOCK_RAW, 0x0300), ('raw ipv6', socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)]:
        result[label] = attempt(lambda: socket.socket(family, kind, protocol).close())
    return result
out['sockets'] = sockets()
def sockets_in_user_namespace():
    result = sockets()
    echo = bytes([8, 0, 0xf7, 0xff, 0, 0, 0, 0])
    sends = {}
    for host in args['hostAddresses'] + ['10.200.0.1']:
        def send():
            s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
            try:
                s.sendto(echo, (host, 0))
            finally:
                s.close()
        sends[host] = attempt(send)
    result['icmp to the host'] = sends
    result['interfaces'] = [entry[1] for entry in socket.if_nameindex()]
    return result
out['socketsInUserNamespace'] = in_namespaces(sockets_in_user_namespace, CLONE_NEWUSER)

empty = ctypes.c_char_p(b'')
out['kernel'] = {
    'bpf': sc(321, 0, 0, 0),
    'perf_event_open': sc(298, 0, 0, -1, -1, 0),
    'keyctl': sc(250, 0, 0),
    'add_key': sc(248, ctypes.c_char_p(b'user'), ctypes.c_char_p(b'probe'), ctypes.c_char_p(b'x'), 1, -4),
    'kexec_load': sc(246, 0, 0, 0, 0),
    'kexec_file_load': sc(320, -1, -1, 0, empty, 0),
    'reboot': sc(169, 0xfee1dead, 672274793, 0x4321fedc, 0),
    'init_module': sc(175, 0, 0, empty),
    'finit_module': sc(313, 0, empty, 0),
    'delete_module': sc(176, ctypes.c_char_p(b'ext4'), 0),
    'open_by_handle_at': sc(304, -100, 0, 0),
    'io_uring_setup': sc(425, 8, ctypes.create_string_buffer(120)),
    'userfaultfd': sc(323, 0),
    'swapon': sc(167, ctypes.c_char_p(b'/workspace'), 0),
    'settimeofday': sc(164, ctypes.byref((ctypes.c_long * 2)(0, 0)), 0),
    'iopl': sc(172, 3),
    'syslog (read the kernel log)': sc(103, 3, ctypes.create_string_buffer(4096), 4096),
}

def write(path):
    def act():
        with open(path, 'w') as handle:
            handle.write('1')
    return attempt(act)
hostname = os.uname().nodename
out['procSys'] = {path: write(path) for path in ['/proc/sys/kernel/hostname', '/proc/sys/vm/drop_caches', '/proc/sys/kernel/core_pattern', '/proc/sys/kernel/modprobe', '/proc/sys/net/ipv4/ip_forward', '/proc/sysrq-trigger']}
out['hostnameUnchanged'] = os.uname().nodename == hostname
out['sys'] = {path: write(path) for path in ['/sys/kernel/uevent_helper', '/sys/kernel/mm/transparent_hugepage/enabled', '/sys/power/state', '/sys/fs/cgroup/memory/memory.limit_in_bytes']}

status = {line.split(':')[0]: line.split(':', 1)[1].strip() for line in open('/proc/self/status').read().splitlines() if ':' in line}
out['capabilities'] = {key: status.get(key, '') for key in ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']}

os.makedirs('/tmp/jail/inner', exist_ok=True)
def chroot_escape():
    result = {}
    old_root = os.open('/', os.O_RDONLY)
    result['chroot into the jail'] = 'ok' if libc.chroot(b'/tmp/jail') == 0 else name(ctypes.get_errno())
    os.fchdir(old_root)
    for _ in range(64):
        os.chdir('..')
    result['chroot to where .. led'] = 'ok' if libc.chroot(b'.') == 0 else name(ctypes.get_errno())
    result['root'] = sorted(os.listdir('/'))
    result['marker'] = attempt(lambda: open(args['marker']).read())
    return result
out['chroot'] = in_namespaces(chroot_escape, CLONE_NEWUSER)
out['chroot']['chroot without a user namespace'] = in_child(lambda: {'chroot': 'ok' if libc.chroot(b'/tmp') == 0 else name(ctypes.get_errno())}).get('chroot')
print(json.dumps(out))
`;

/** Tries to change, replace or shadow the read-only toolbox the driver mounts under /.airlock. */
export const TOOLBOX_TAMPERING = String.raw`
toolbox = args['toolbox']
def write_into():
    with open(toolbox, 'r+b') as handle:
        handle.write(b'pwned')
out = {
    'control: read it': attempt(lambda: len(open(toolbox, 'rb').read(64))),
    'write into it': attempt(write_into),
    'truncate it': attempt(lambda: os.truncate(toolbox, 0)),
    'unlink it': attempt(lambda: os.unlink(toolbox)),
    'rename it away': attempt(lambda: os.rename(toolbox, '/tmp/moved-toolbox')),
    'chmod it': attempt(lambda: os.chmod(toolbox, 0o777)),
    'bind another file over it': mount('/etc/hostname', toolbox, None, MS_BIND),
    'remount it read-write': mount(None, toolbox, None, MS_REMOUNT | MS_BIND),
}
def in_user_namespace():
    result = {'write into it': attempt(write_into)}
    # gVisor lets a user namespace flip the flag of its own copy of the mount; what counts is whether a write then lands.
    result['remount it read-write'] = mount(None, toolbox, None, MS_REMOUNT | MS_BIND)
    result['write after the remount'] = attempt(write_into)
    result['umount it'] = umount(toolbox)
    return result
out['in a user and mount namespace'] = in_namespaces(in_user_namespace, CLONE_NEWUSER | CLONE_NEWNS)
print(json.dumps(out))
`;

/** Overwrites image files in the session's root layer, and every /proc/PID/exe it can open (the runc CVE-2019-5736 pattern). */
export const IMAGE_OVERWRITE = String.raw`
out = {}
for path in args['paths']:
    def clobber():
        with open(path, 'wb') as handle:
            handle.write(b'clobbered by a session\n')
    out[path] = attempt(clobber)
exes = {}
for pid in sorted(int(p) for p in os.listdir('/proc') if p.isdigit()):
    def clobber_exe():
        with open('/proc/%d/exe' % pid, 'r+b') as handle:
            handle.write(b'\x7fELF pwned')
    exes[str(pid)] = attempt(clobber_exe)
out['exes'] = exes
print(json.dumps(out))
`;

/** TCP from inside to the API's port on every address that could lead to the host, with a listener of the session's own as control. */
export const LOOPBACK_REACH = String.raw`
def tcp(host, port):
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    s = socket.socket(family)
    s.settimeout(3)
    try:
        s.connect((host, port))
        s.sendall(b'GET /healthz HTTP/1.0\r\n\r\n')
        return 'answered: ' + s.recv(200).decode(errors='replace')
    except Exception as e:
        return 'failed: ' + (name(e.errno) if isinstance(e, OSError) and e.errno else type(e).__name__)
    finally:
        s.close()
port = args['port']
print(json.dumps({
    'tcp': {'%s:%d' % (host, port): tcp(host, port) for host in args['hosts']},
    'interfaces': [entry[1] for entry in socket.if_nameindex()],
}))
`;

/** From a networked session, every way through its egress gateway to the API's port. */
export const GATEWAY_REACH = String.raw`
gateway = os.environ['HTTP_PROXY'].split('//')[1].split(':')[0]
port = args['port']
def exchange(host, target_port, request):
    s = socket.socket()
    s.settimeout(8)
    try:
        s.connect((host, target_port))
        s.sendall(request)
        data = b''
        while len(data) < 4096:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return 'answered: ' + data.decode(errors='replace')[:600]
    except Exception as e:
        return 'failed: ' + (name(e.errno) if isinstance(e, OSError) and e.errno else type(e).__name__)
    finally:
        s.close()
out = {'gateway': gateway}
for target in args['targets']:
    out['CONNECT ' + target] = exchange(gateway, 3128, ('CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' % (target, target)).encode())
    out['proxied GET http://' + target] = exchange(gateway, 3128, ('GET http://%s/v1/sessions HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' % (target, target)).encode())
    out['transparent port 80, Host ' + target] = exchange(gateway, 80, ('GET /v1/sessions HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' % target).encode())
for host in args['direct']:
    out['direct ' + host] = exchange(host, port, b'GET /healthz HTTP/1.0\r\n\r\n')
print(json.dumps(out))
`;

/** Every process's environment and command line, every file outside the image's own dirs, and the mount table, searched for needles. */
export const SECRET_SCAN = String.raw`
needles = {label: ''.join(parts).encode() for label, parts in args['needles'].items()}
def found(data):
    return sorted(label for label, value in needles.items() if value in data)
hits, scanned = [], 0
for pid in [p for p in os.listdir('/proc') if p.isdigit()] + ['self']:
    for field in ('environ', 'cmdline', 'mountinfo'):
        try:
            data = open('/proc/%s/%s' % (pid, field), 'rb').read()
        except OSError:
            continue
        hits += ['/proc/%s/%s: %s' % (pid, field, label) for label in found(data)]
skip = {'proc', 'sys', 'usr', 'lib', 'lib64', 'bin', 'sbin'}
for root, dirs, files in os.walk('/'):
    if root == '/':
        dirs[:] = [d for d in dirs if d not in skip]
    for entry in files:
        path = os.path.join(root, entry)
        try:
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            data = open(path, 'rb').read(4 << 20)
        except OSError:
            continue
        scanned += 1
        hits += [path + ': ' + label for label in found(data)]
print(json.dumps({'scanned': scanned, 'hits': sorted(set(hits))}))
`;
