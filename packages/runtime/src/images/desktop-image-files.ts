/**
 * What the desktop image adds to Debian's packages: the script that starts
 * the session's display with its machine (an on-start hook), a launcher for
 * Chromium that works inside gVisor, and an on-fork hook for the browser.
 *
 * The display runs as ordinary processes of the machine, started by the
 * machine's init like any command: a checkpoint saves them with the rest of
 * the memory, so suspend, resume and fork keep the open windows without
 * anything being restarted (docs/desktop.md).
 */

import { DISPLAY as DESKTOP_DISPLAY, VNC_PORT as DESKTOP_VNC_PORT } from '../core/desktop-operations.js';

/** Where the display's programs write their logs inside the machine. */
export const DESKTOP_LOG_DIR = '/var/log/airlock-desktop';

/** Debian packages of the desktop image, on top of the stock image's. */
export const DESKTOP_PACKAGES = [
  'xvfb',
  'openbox',
  'x11vnc',
  'chromium',
  'xdotool',
  'x11-apps',
  'x11-utils',
  'fonts-dejavu-core',
  'fonts-liberation',
  // dconf-service (GTK's settings, for Chromium) needs a session bus, and debootstrap resolves no alternatives
  'dbus-x11',
] as const;

/**
 * Starts Xvfb, the window manager and the VNC server, then returns once the
 * display answers, so that a session is created with a working screen.
 * Size from AIRLOCK_DESKTOP_WIDTH / _HEIGHT (the contract's `desktop`).
 * The daemons get their own session (setsid) and log files: they outlive the
 * hook, and nothing of theirs holds the hook's output open.
 */
const START_SCRIPT = `#!/bin/sh
set -u
W=\${AIRLOCK_DESKTOP_WIDTH:-1280}
H=\${AIRLOCK_DESKTOP_HEIGHT:-800}
L=${DESKTOP_LOG_DIR}
export DISPLAY=${DESKTOP_DISPLAY}
mkdir -p "$L"
if xdpyinfo >/dev/null 2>&1; then echo "display $DISPLAY already runs"; exit 0; fi
setsid Xvfb ${DESKTOP_DISPLAY} -screen 0 "\${W}x\${H}x24" -nolisten tcp -ac -dpi 96 +extension XTEST >"$L/xvfb.log" 2>&1 </dev/null &
i=0
until xdpyinfo >/dev/null 2>&1; do
  i=$((i+1))
  if [ $i -gt 300 ]; then echo "Xvfb did not answer within 30 s; see $L/xvfb.log" >&2; tail -5 "$L/xvfb.log" >&2; exit 1; fi
  sleep 0.1
done
setsid openbox >"$L/openbox.log" 2>&1 </dev/null &
setsid x11vnc -display ${DESKTOP_DISPLAY} -localhost -rfbport ${DESKTOP_VNC_PORT} -forever -shared -nopw -noxdamage -quiet >"$L/x11vnc.log" 2>&1 </dev/null &
echo "display $DISPLAY started at \${W}x\${H}"
`;

/**
 * Opens URLs in Chromium on the display, started once; later calls open
 * tabs in the running browser. Chromium's own sandbox needs namespaces and a
 * setuid helper that gVisor does not give; the gVisor sandbox is the boundary
 * (`--test-type` keeps Chromium from covering the page with a warning about it).
 */
const BROWSER_SCRIPT = `#!/bin/sh
export DISPLAY=\${DISPLAY:-${DESKTOP_DISPLAY}}
mkdir -p ${DESKTOP_LOG_DIR}
# The window fills the screen: openbox does not maximize it on its own.
size=$(xdotool getdisplaygeometry 2>/dev/null | tr ' ' ',')
setsid chromium --no-sandbox --test-type --disable-gpu --disable-dev-shm-usage --no-first-run --no-default-browser-check \\
  --disable-features=Translate,MediaRouter,OptimizationHints --disable-background-networking --password-store=basic \\
  --disable-component-update --user-data-dir=/root/.config/chromium --window-position=0,0 --window-size=\${size:-1280,800} "$@" \\
  >>${DESKTOP_LOG_DIR}/chromium.log 2>&1 </dev/null &
`;

/**
 * A branch has a new hostname, and Chromium's profile lock names the host
 * that holds it: point the lock at the branch, so that `airlock-browser URL`
 * opens a tab in the running browser instead of refusing a profile "in use
 * on another computer".
 */
const FORK_BROWSER_HOOK = `#!/bin/sh
lock=/root/.config/chromium/SingletonLock
[ -L "$lock" ] || exit 0
pid=$(readlink "$lock" | sed 's/.*-//')
ln -sfn "$(hostname)-$pid" "$lock"
`;

/** One file the desktop image adds: path inside the image, content, mode. */
export interface ImageFile {
  path: string;
  content: string;
  mode: number;
}

/** Every file the desktop image adds to the Debian tree. */
export const DESKTOP_IMAGE_FILES: readonly ImageFile[] = [
  { path: 'usr/local/lib/airlock/desktop-start', content: START_SCRIPT, mode: 0o755 },
  { path: 'etc/airlock/hooks/on-start.d/50-desktop', content: '#!/bin/sh\nexec /usr/local/lib/airlock/desktop-start\n', mode: 0o755 },
  { path: 'etc/airlock/hooks/on-fork.d/50-desktop-browser', content: FORK_BROWSER_HOOK, mode: 0o755 },
  { path: 'usr/local/bin/airlock-browser', content: BROWSER_SCRIPT, mode: 0o755 },
];

/** Environment every process of the desktop image gets (recorded in the image, applied by the driver). */
export const DESKTOP_IMAGE_ENV: Readonly<Record<string, string>> = { DISPLAY: DESKTOP_DISPLAY };
