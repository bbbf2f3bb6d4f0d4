/**
 * The desktop helper: one Python process inside a desktop machine that keeps
 * its X connection (through libxdo, the library xdotool is made of, and
 * libX11) and answers the same `xdotool` chains and `xwd -root` that the
 * desktop tools would otherwise start as programs. Starting xdotool or xwd
 * inside gVisor costs 60-140 ms (loading the libraries, opening the display,
 * reading the keymap); a request to the helper costs a few. It runs with the
 * machine's own power only, listens on the machine's loopback, and the host
 * treats its answers as untrusted (docs/desktop.md, "The desktop helper").
 *
 * Protocol, per connection, any number of requests in turn: the host writes
 * one JSON line `{"argv": [...]}`; the helper answers one JSON line
 * `{"exitCode": N, "stdoutBytes": N, "stderr": "..."}` followed by that many
 * bytes of output, or `{"unsupported": true}` for a command it does not know
 * (the host then runs the program itself).
 */

/** TCP port of the desktop helper on the machine's own loopback (never on the host's network). */
export const DESKTOP_HELPER_PORT = 5909;

/**
 * The helper's source. Started by `python3 -c` with this text on its stdin;
 * it sets up (display, libraries, socket), prints `ready`, and leaves a
 * daemon behind, so the command that started it ends with the outcome.
 */
export const DESKTOP_HELPER_SCRIPT = String.raw`
import ctypes, json, os, socket, sys, threading, time, zlib
from ctypes import CFUNCTYPE, POINTER, byref, c_char, c_char_p, c_int, c_size_t, c_uint, c_ulong, c_void_p, c_ubyte

DISPLAY = sys.argv[1].encode()
PORT = int(sys.argv[2])
MAX_REQUEST = 1 << 20
COMMANDS = {'getactivewindow', 'getwindowname', 'mousemove', 'mousedown', 'mouseup', 'click', 'keydown', 'keyup', 'key', 'type', 'sleep', 'getmouselocation'}

x11 = ctypes.CDLL('libX11.so.6')
xdo_library = ctypes.CDLL('libxdo.so.3')

class XImage(ctypes.Structure):
    _fields_ = [('width', c_int), ('height', c_int), ('xoffset', c_int), ('format', c_int), ('data', c_void_p),
                ('byte_order', c_int), ('bitmap_unit', c_int), ('bitmap_bit_order', c_int), ('bitmap_pad', c_int),
                ('depth', c_int), ('bytes_per_line', c_int), ('bits_per_pixel', c_int),
                ('red_mask', c_ulong), ('green_mask', c_ulong), ('blue_mask', c_ulong)]

def declare(library, name, restype, *argtypes):
    function = getattr(library, name)
    function.restype = restype
    function.argtypes = list(argtypes)
    return function

xdo_new = declare(xdo_library, 'xdo_new', c_void_p, c_char_p)
xdo_move_mouse = declare(xdo_library, 'xdo_move_mouse', c_int, c_void_p, c_int, c_int, c_int)
xdo_mouse_down = declare(xdo_library, 'xdo_mouse_down', c_int, c_void_p, c_ulong, c_int)
xdo_mouse_up = declare(xdo_library, 'xdo_mouse_up', c_int, c_void_p, c_ulong, c_int)
xdo_click_window = declare(xdo_library, 'xdo_click_window', c_int, c_void_p, c_ulong, c_int)
xdo_send_keysequence_window = declare(xdo_library, 'xdo_send_keysequence_window', c_int, c_void_p, c_ulong, c_char_p, c_uint)
xdo_send_keysequence_window_down = declare(xdo_library, 'xdo_send_keysequence_window_down', c_int, c_void_p, c_ulong, c_char_p, c_uint)
xdo_send_keysequence_window_up = declare(xdo_library, 'xdo_send_keysequence_window_up', c_int, c_void_p, c_ulong, c_char_p, c_uint)
xdo_enter_text_window = declare(xdo_library, 'xdo_enter_text_window', c_int, c_void_p, c_ulong, c_char_p, c_uint)
xdo_get_active_window = declare(xdo_library, 'xdo_get_active_window', c_int, c_void_p, POINTER(c_ulong))
xdo_get_window_name = declare(xdo_library, 'xdo_get_window_name', c_int, c_void_p, c_ulong, POINTER(POINTER(c_ubyte)), POINTER(c_int), POINTER(c_int))
xdo_get_mouse_location = declare(xdo_library, 'xdo_get_mouse_location', c_int, c_void_p, POINTER(c_int), POINTER(c_int), POINTER(c_int))
XDefaultRootWindow = declare(x11, 'XDefaultRootWindow', c_ulong, c_void_p)
XDisplayWidth = declare(x11, 'XDisplayWidth', c_int, c_void_p, c_int)
XDisplayHeight = declare(x11, 'XDisplayHeight', c_int, c_void_p, c_int)
XGetImage = declare(x11, 'XGetImage', POINTER(XImage), c_void_p, c_ulong, c_int, c_int, c_uint, c_uint, c_ulong, c_int)
XDestroyImage = declare(x11, 'XDestroyImage', c_int, POINTER(XImage))
XSync = declare(x11, 'XSync', c_int, c_void_p, c_int)
XFree = declare(x11, 'XFree', c_int, c_void_p)
XDefaultVisual = declare(x11, 'XDefaultVisual', c_void_p, c_void_p, c_int)
XDefaultDepth = declare(x11, 'XDefaultDepth', c_int, c_void_p, c_int)
XSetErrorHandler = declare(x11, 'XSetErrorHandler', c_void_p, c_void_p)

# An X error must not end the helper (Xlib's default handler exits): it is noted, and the request fails.
x_errors = []
@CFUNCTYPE(c_int, c_void_p, c_void_p)
def on_x_error(_display, _event):
    x_errors.append(1)
    return 0
XSetErrorHandler(ctypes.cast(on_x_error, c_void_p))

class XShmSegmentInfo(ctypes.Structure):
    _fields_ = [('shmseg', c_ulong), ('shmid', c_int), ('shmaddr', c_void_p), ('readOnly', c_int)]

# MIT-SHM: the X server copies the screen into memory shared with the helper instead of sending 4 MB down
# its socket. Anything that fails there (no extension, no SysV shm) leaves plain XGetImage.
try:
    xext = ctypes.CDLL('libXext.so.6')
    libc = ctypes.CDLL(None, use_errno=True)
    XShmQueryExtension = declare(xext, 'XShmQueryExtension', c_int, c_void_p)
    XShmCreateImage = declare(xext, 'XShmCreateImage', POINTER(XImage), c_void_p, c_void_p, c_uint, c_int, c_void_p, POINTER(XShmSegmentInfo), c_uint, c_uint)
    XShmAttach = declare(xext, 'XShmAttach', c_int, c_void_p, POINTER(XShmSegmentInfo))
    XShmGetImage = declare(xext, 'XShmGetImage', c_int, c_void_p, c_ulong, POINTER(XImage), c_int, c_int, c_ulong)
    shmget = declare(libc, 'shmget', c_int, c_int, c_size_t, c_int)
    shmat = declare(libc, 'shmat', c_void_p, c_int, c_void_p, c_int)
    shmctl = declare(libc, 'shmctl', c_int, c_int, c_int, c_void_p)
except (OSError, AttributeError):
    xext = None
shared = {'usable': xext is not None}

xdo = xdo_new(DISPLAY)
if not xdo:
    sys.stderr.write('cannot open display %s\n' % DISPLAY.decode())
    sys.exit(3)
# The first field of xdo_t is its Display*.
display = ctypes.cast(xdo, POINTER(c_void_p))[0]
lock = threading.Lock()

def shared_image(width, height):
    # One segment for the helper's life, made again when the screen's size changes.
    if not shared['usable']:
        return None
    if shared.get('size') == (width, height):
        return shared['image']
    try:
        if not XShmQueryExtension(display):
            raise OSError('no MIT-SHM')
        info = XShmSegmentInfo()
        image = XShmCreateImage(display, XDefaultVisual(display, 0), XDefaultDepth(display, 0), 2, None, byref(info), width, height)
        if not image:
            raise OSError('XShmCreateImage failed')
        info.shmid = shmget(0, image.contents.bytes_per_line * height, 0o1600)
        if info.shmid < 0:
            raise OSError('shmget failed')
        info.shmaddr = shmat(info.shmid, None, 0)
        image.contents.data = info.shmaddr
        del x_errors[:]
        attached = XShmAttach(display, byref(info))
        XSync(display, 0)
        # Marked for removal now: it goes away with the last process attached to it.
        shmctl(info.shmid, 0, None)
        if not attached or x_errors:
            raise OSError('XShmAttach failed')
    except OSError:
        shared['usable'] = False
        return None
    shared.update(size=(width, height), image=image, info=info)
    return image

def grab(width, height):
    # (XImage, pixels as a buffer, release) from shared memory, else by XGetImage
    image = shared_image(width, height)
    if image:
        del x_errors[:]
        if XShmGetImage(display, XDefaultRootWindow(display), image, 0, 0, 0xFFFFFFFF) and not x_errors:
            size = image.contents.bytes_per_line * height
            return image, memoryview((c_char * size).from_address(image.contents.data)).cast('B'), lambda: None
        shared['usable'] = False
    image = XGetImage(display, XDefaultRootWindow(display), 0, 0, width, height, 0xFFFFFFFF, 2)
    if not image:
        return None, None, None
    size = image.contents.bytes_per_line * image.contents.height
    return image, memoryview((c_char * size).from_address(image.contents.data)).cast('B'), lambda: XDestroyImage(image)

def screen_dump(max_side):
    width, height = XDisplayWidth(display, 0), XDisplayHeight(display, 0)
    image, view, release = grab(width, height)
    if not image:
        return 1, b'', 'XGetImage failed'
    try:
        i = image.contents
        pixels = view
        width, height, line = i.width, i.height, i.bytes_per_line
        # For a thumbnail, every step-th pixel of every step-th row, the largest step that keeps it at least max_side
        # (the host averages the rest of the way): far fewer bytes to send than the whole screen.
        step = max(1, min(width, height, max(width, height) // max_side)) if max_side else 1
        if step > 1 and i.bits_per_pixel == 32:
            pixels = b''.join(view[row * line:row * line + width * 4].cast('I')[::step].tobytes() for row in range(0, height, step))
            width, height = (width + step - 1) // step, (height + step - 1) // step
            line = width * 4
        fields = [100, 7, 2, i.depth, width, height, 0, i.byte_order, i.bitmap_unit, i.bitmap_bit_order, i.bitmap_pad,
                  i.bits_per_pixel, line, 4, i.red_mask, i.green_mask, i.blue_mask, 8, 0, 0, width, height, 0, 0, 0]
        header = b''.join(int(value).to_bytes(4, 'big') for value in fields)
        return 0, header + bytes(pixels), ''
    finally:
        view.release()
        release()

def options(args, index, names):
    found = {}
    while index < len(args) and args[index] in names:
        found[args[index]] = args[index + 1]
        index += 2
    if index < len(args) and args[index] == '--':
        return found, index + 1, True
    return found, index, False

def words(args, index, until_end):
    end = index
    while end < len(args) and (until_end or args[end] not in COMMANDS):
        end += 1
    return args[index:end], end

def xdotool(args, progress):
    out = []
    window = None
    index = 0
    while index < len(args):
        command = args[index]
        index += 1
        progress['commands'] += 1
        if command == 'getactivewindow':
            found = c_ulong(0)
            if xdo_get_active_window(xdo, byref(found)) != 0 or found.value == 0:
                return 1, b''.join(out), 'no window has the focus'
            window = found.value
            if index == len(args):
                out.append(b'%d\n' % window)
        elif command == 'getwindowname':
            if window is None:
                return None
            name, length, kind = POINTER(c_ubyte)(), c_int(0), c_int(0)
            if xdo_get_window_name(xdo, window, byref(name), byref(length), byref(kind)) != 0:
                return 1, b''.join(out), 'cannot read the window name'
            out.append((ctypes.string_at(name, length.value) if name else b'') + b'\n')
            if name:
                XFree(name)
        elif command == 'mousemove':
            xdo_move_mouse(xdo, int(args[index]), int(args[index + 1]), 0)
            index += 2
        elif command in ('mousedown', 'mouseup'):
            (xdo_mouse_down if command == 'mousedown' else xdo_mouse_up)(xdo, 0, int(args[index]))
            index += 1
        elif command == 'click':
            found, index, _ = options(args, index, ('--repeat', '--delay'))
            button, repeat = int(args[index]), int(found.get('--repeat', 1))
            index += 1
            # Like xdotool's click, without its sleep after the last click (80 ms of a click's 95, measured).
            for count in range(repeat):
                if count > 0:
                    XSync(display, 0)
                    time.sleep(float(found.get('--delay', 100)) / 1000)
                xdo_click_window(xdo, 0, button)
        elif command in ('keydown', 'keyup'):
            keys, index = words(args, index, False)
            for key in keys:
                (xdo_send_keysequence_window_down if command == 'keydown' else xdo_send_keysequence_window_up)(xdo, 0, key.encode(), 12000)
        elif command == 'key':
            found, index, dashes = options(args, index, ('--delay',))
            keys, index = words(args, index, dashes)
            delay = int(float(found.get('--delay', 12)) * 1000)
            for position, key in enumerate(keys):
                if position > 0:
                    time.sleep(delay / 1e6)
                # As xdotool's key: libxdo halves the delay itself (half after the presses, half after the releases).
                if xdo_send_keysequence_window(xdo, 0, key.encode(), delay) != 0:
                    return 1, b''.join(out), '(symbol) No such key name %r' % key
        elif command == 'type':
            found, index, dashes = options(args, index, ('--delay',))
            texts, index = words(args, index, True)
            for text in texts:
                xdo_enter_text_window(xdo, 0, text.encode(), int(float(found.get('--delay', 12)) * 1000))
        elif command == 'sleep':
            time.sleep(float(args[index]))
            index += 1
        elif command == 'getmouselocation':
            if index < len(args) and args[index] == '--shell':
                index += 1
            # Without the window under the pointer: finding it walks the window tree, and only X and Y are read.
            x, y, screen = c_int(0), c_int(0), c_int(0)
            xdo_get_mouse_location(xdo, byref(x), byref(y), byref(screen))
            out.append(b'X=%d\nY=%d\nSCREEN=%d\n' % (x.value, y.value, screen.value))
        else:
            return None
    XSync(display, 0)
    return 0, b''.join(out), ''

def answer(request):
    argv = request.get('argv')
    if not isinstance(argv, list) or not argv or not all(isinstance(word, str) for word in argv):
        return None
    program, args = os.path.basename(argv[0]), argv[1:]
    with lock:
        if program == 'xwd' and '-root' in args:
            shrink = request.get('shrink')
            return screen_dump(shrink if isinstance(shrink, int) and shrink > 0 else 0)
        if program == 'xdotool':
            progress = {'commands': 0}
            try:
                outcome = xdotool(args, progress)
            except (IndexError, ValueError):
                outcome = None
            # Unknown is only said before anything ran: the host then runs the whole chain as a program.
            if outcome is None and progress['commands'] > 1:
                return 1, b'', 'the desktop helper cannot finish this xdotool chain: %r' % args[:8]
            return outcome
    return None

def serve(connection):
    with connection:
        reader = connection.makefile('rb')
        while True:
            line = reader.readline(MAX_REQUEST)
            if not line.endswith(b'\n'):
                return
            try:
                outcome = answer(json.loads(line))
            except ValueError:
                outcome = None
            except Exception as error:
                # Said, not dropped: a silent close would look like a helper that died before reading the request.
                outcome = (1, b'', 'the desktop helper failed: %s' % error)
            if outcome is None:
                connection.sendall(b'{"unsupported":true}\n')
                continue
            code, stdout, stderr = outcome
            fields = {'exitCode': code, 'stderr': stderr[:4000]}
            if len(stdout) > 65536:
                # A screen is mostly flat colour: zlib at level 1 makes 4 MB some 30-300 KB in ~10 ms, far less than sending it.
                fields.update(encoding='zlib', outputBytes=len(stdout))
                stdout = zlib.compress(stdout, 1)
            fields['stdoutBytes'] = len(stdout)
            connection.sendall(json.dumps(fields).encode() + b'\n' + stdout)

listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    listener.bind(('127.0.0.1', PORT))
except OSError as error:
    # Another helper already serves this display (two calls started one at once).
    print('already running' if error.errno == 98 else 'cannot listen: %s' % error, flush=True)
    sys.exit(0 if error.errno == 98 else 4)
listener.listen(16)
if os.fork() > 0:
    print('ready', flush=True)
    os._exit(0)
os.setsid()
null = os.open('/dev/null', os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
while True:
    connection, _ = listener.accept()
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(connection,), daemon=True).start()
`;
