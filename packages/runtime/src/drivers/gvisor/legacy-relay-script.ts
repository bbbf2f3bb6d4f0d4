/**
 * The relay of the first command protocol, kept for sandboxes whose init
 * predates the current one: a sandbox started by an older Airlock, or
 * restored from an image it took. A restore keeps the init (and the JOB
 * script) that the image was checkpointed with, whatever the new spec says,
 * so such a machine still parks its slots with two tees waiting on `g1`/`g2`
 * and needs this relay (see relay-protocol.ts for how the driver tells).
 * Do not change it: it must match those running scripts.
 */
import { START_MARKER_PRINTF } from './start-marker.js';
import { RUN_DIR, TOOLBOX_PATH } from './in-sandbox-scripts.js';

/** The relay for slots made by the first INIT/JOB scripts (three fifos per stream, tees parked in the slot). */
export const LEGACY_RELAY_SCRIPT = `B=${TOOLBOX_PATH}
R=${RUN_DIR}
exec 4<&0
n=0
while :; do
  s=
  read -r s 2>/dev/null <$R/next
  if [ -n "$s" ] && [ -p $R/$s.go ] && [ ! -e $R/$s.claim ]; then
    set -C
    if { echo $$ >$R/$s.claim; } 2>/dev/null; then set +C; break; fi
    set +C
  fi
  n=$((n+1))
  [ $n -gt 500 ] && { echo 'airlock: no command slot became ready within 5 s; is the sandbox out of processes?' >&2; exit 125; }
  $B usleep 10000
done
J=$R/$s
echo $s >$R/ctl
printf '%s' "$1" >$J.cmd
exec 5<>$J.rc
echo >$J.g1
echo >$J.g2
printf '${START_MARKER_PRINTF}'
echo "$2" >$J.go
$B cat $J.out & op=$!
$B cat $J.err >&2 & ep=$!
ip=
[ "$2" = 1 ] && { $B cat <&4 >$J.in & ip=$!; }
exec 4<&-
read -r rc <&5
n=0
while [ $n -lt 25 ] && { [ -e /proc/$op/fd/1 ] || [ -e /proc/$ep/fd/1 ]; }; do
  n=$((n+1))
  read -r -t 0.005 _ <&5
done
kill -9 $op $ep $ip 2>/dev/null
exit \${rc:-125}
`;
