/**
 * The Python programs the cross-session isolation test runs inside the
 * sandboxes (Debian's python3): the attacker's probes in session A, and the
 * things session B holds (a SysV segment, an abstract socket). Each prints
 * one JSON object that the test asserts on.
 */
/** Shared by every probe: `args` is the JSON argument, `needles` the joined halves. */
export const PRELUDE = String.raw`
import ctypes, errno, json, os, signal, socket, stat, subprocess, sys, time, urllib.request
args = json.loads(sys.argv[1])
needles = {name: ''.join(parts).encode() for name, parts in args.get('needles', {}).items()}
libc = ctypes.CDLL(None, use_errno=True)
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if isinstance(e, OSError) and e.errno else type(e).__name__ + ': ' + str(e)
def found_in(data):
    return sorted(name for name, needle in needles.items() if needle in data)
def read(path):
    with open(path, 'rb') as handle:
        return handle.read()
`;

/** Every regular file and every name under / (but /proc and /sys), searched for the needles. */
export const SCAN_FILESYSTEM = String.raw`
hits, scanned = [], 0
for root, dirs, files in os.walk('/'):
    if root == '/':
        dirs[:] = [d for d in dirs if d not in ('proc', 'sys')]
    for entry in dirs + files:
        hits += ['name ' + name + ': ' + os.path.join(root, entry) for name in found_in(entry.encode())]
    for entry in files:
        path = os.path.join(root, entry)
        try:
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            data = read(path)
        except OSError:
            continue
        scanned += 1
        hits += [name + ': ' + path for name in found_in(data)]
print(json.dumps({'scanned': scanned, 'hits': hits}))
`;

/** What A's /proc shows, and what signalling B's pids (in B and on the host) does from A. */
export const PROBE_PROCESSES = String.raw`
pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
leaks = []
for pid in pids:
    for field in ('cmdline', 'environ', 'comm', 'status', 'mountinfo', 'cgroup'):
        try:
            leaks += [str(pid) + '/' + field + ': ' + name for name in found_in(read('/proc/%d/%s' % (pid, field)))]
        except OSError:
            pass
signals = {}
for pid in args['targets']:
    entry = {'local': os.path.exists('/proc/%d' % pid)}
    if entry['local']:
        # A number A itself uses: A's own process, which must not look like B's; not killed here (it may be A's init).
        entry['leak'] = found_in(read('/proc/%d/cmdline' % pid)) if os.path.exists('/proc/%d/cmdline' % pid) else []
    for sig in ([0] if entry['local'] else [0, signal.SIGTERM, signal.SIGKILL]):
        try:
            os.kill(pid, sig)
            entry[str(int(sig))] = 'delivered'
        except OSError as e:
            entry[str(int(sig))] = err(e)
    signals[str(pid)] = entry
print(json.dumps({'pids': pids, 'leaks': leaks, 'signals': signals}))
`;

/** Block devices, mount and loop attempts (the image's util-linux and the raw syscall), device nodes for B's loop device. */
export const PROBE_DEVICES = String.raw`
MS_RDONLY, MS_BIND = 1, 4096
target = '/mnt/xsess'
os.makedirs(target, exist_ok=True)
def tool(argv):
    try:
        done = subprocess.run(argv, capture_output=True, timeout=20)
        return {'code': done.returncode, 'output': (done.stdout + done.stderr).decode(errors='replace')[-300:]}
    except Exception as e:
        return {'code': -1, 'output': err(e)}
def mount(source, fstype, flags=0):
    result = libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None, ctypes.c_ulong(flags), None)
    return 'mounted' if result == 0 else errno.errorcode.get(ctypes.get_errno(), '?')
def node(path, kind, major, minor):
    entry = {}
    try:
        os.mknod(path, kind | 0o600, os.makedev(major, minor))
        entry['mknod'] = 'made'
    except OSError as e:
        entry['mknod'] = err(e)
    try:
        data = read(path)[:1 << 20]
        entry['open'] = 'read %d bytes' % len(data)
        entry['leak'] = found_in(data)
    except OSError as e:
        entry['open'] = err(e)
    return entry
mountinfo = read('/proc/self/mountinfo')
image, loop, major, minor = args['image'], args['loop'], args['major'], args['minor']
result = {
    'dev': sorted(os.listdir('/dev')),
    'sysBlock': sorted(os.listdir('/sys/block')) if os.path.isdir('/sys/block') else [],
    'tools': {
        'mount -o loop <B image>': tool(['/usr/bin/mount', '-o', 'loop,ro', image, target]),
        'mount <B loop device>': tool(['/usr/bin/mount', '-t', 'ext4', '-o', 'ro', loop, target]),
        'mount -t tmpfs': tool(['/usr/bin/mount', '-t', 'tmpfs', 'none', target]),
        'mount --bind /': tool(['/usr/bin/mount', '--bind', '/', target]),
        'losetup <own file>': tool(['/usr/sbin/losetup', '--find', '--show', '--read-only', '/workspace/control.txt']),
    },
    'syscalls': {
        'ext4 <B image>': mount(image, 'ext4', MS_RDONLY),
        'ext4 <B loop device>': mount(loop, 'ext4', MS_RDONLY),
        'tmpfs': mount('none', 'tmpfs'),
        'bind /': mount('/', None, MS_BIND),
        'proc': mount('proc', 'proc'),
    },
    'nodes': {
        'B loop in /tmp': node('/tmp/xsess-loop', stat.S_IFBLK, major, minor),
        'B loop in /workspace': node('/workspace/xsess-loop', stat.S_IFBLK, major, minor),
        'loop-control': node('/tmp/xsess-loop-control', stat.S_IFCHR, 10, 237),
        '/dev/mem': node('/tmp/xsess-mem', stat.S_IFCHR, 1, 1),
    },
    'mountsUnchanged': read('/proc/self/mountinfo') == mountinfo,
    'target': os.listdir(target),
}
print(json.dumps(result))
`;

/** TCP to every address and port that could lead to B, the exposed URL, B's abstract socket and SysV key. */
export const PROBE_NETWORK = String.raw`
def tcp(host, port):
    s = socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET)
    s.settimeout(3)
    try:
        s.connect((host, port))
        s.sendall(b'GET / HTTP/1.0\r\n\r\n')
        return 'connected, leak %s' % found_in(s.recv(65536))
    except Exception as e:
        return 'failed: ' + err(e)
    finally:
        s.close()
def abstract(name):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(3)
    try:
        s.connect('\0' + name)
        return 'connected, leak %s' % found_in(s.recv(4096))
    except Exception as e:
        return 'failed: ' + err(e)
    finally:
        s.close()
def http(url):
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=5) as r:
            return 'answered %d, leak %s' % (r.status, found_in(r.read()))
    except Exception as e:
        return 'failed: ' + str(e)
shm = libc.shmget(args['shmKey'], 0, 0)
print(json.dumps({
    'tcp': {'%s:%d' % (h, p): tcp(h, p) for h in args['hosts'] for p in args['ports']},
    'exposedUrl': http(args['exposedUrl']),
    'abstract': abstract(''.join(args['abstract'])),
    'shm': 'found %d' % shm if shm >= 0 else errno.errorcode.get(ctypes.get_errno(), '?'),
    'interfaces': [line.split(':')[0].strip() for line in read('/proc/net/dev').decode().splitlines()[2:]],
}))
`;

/** Run in B: creates the SysV segment holding the secret (it outlives this process). */
export const B_SHARED_MEMORY = String.raw`
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(args['shmKey'], 4096, 0o1000 | 0o600)
address = libc.shmat(shmid, None, 0)
ctypes.memmove(address, args['secret'].encode(), len(args['secret']))
libc.shmdt(ctypes.c_void_p(address))
print(json.dumps({'shmid': shmid}))
`;

/** Run detached in B: answers every connection on an abstract unix socket with the secret. */
export const B_ABSTRACT_LISTENER = `import socket, sys
server = socket.socket(socket.AF_UNIX)
server.bind('\\0' + sys.argv[1])
server.listen(8)
while True:
    connection, _ = server.accept()
    connection.sendall(sys.argv[2].encode())
    connection.close()`;

/** Run detached in A: kills every process it can see (B's pid numbers too), reports, then kills A's init. */
export const KILL_EVERYTHING = String.raw`
time.sleep(0.5)
me = os.getpid()
seen = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
report = {'seen': seen, 'killed': {}}
for pid in sorted(set(seen + args['targets']) - {me, 1}):
    try:
        os.kill(pid, signal.SIGKILL)
        report['killed'][str(pid)] = 'delivered'
    except OSError as e:
        report['killed'][str(pid)] = err(e)
try:
    os.kill(-1, signal.SIGKILL)
    report['minusOne'] = 'delivered'
except OSError as e:
    report['minusOne'] = err(e)
time.sleep(0.5)
report['left'] = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
with open('/workspace/kill-report.json.tmp', 'w') as handle:
    handle.write(json.dumps(report))
    handle.flush()
    os.fsync(handle.fileno())
os.rename('/workspace/kill-report.json.tmp', '/workspace/kill-report.json')
os.kill(1, signal.SIGKILL)
`;
