import { test } from 'node:test';
import assert from 'node:assert/strict';
import { analyzeCommand, MAX_ANALYSIS_DEPTH, type CommandAnalysis } from '../../../src/policy/shell-analysis.js';

/** [command, programs] pairs that must be fully analysable. */
const ANALYSABLE: [string, string[]][] = [
  // the cases from the brief
  ['sh -c "ls && rm -rf /workspace"', ['ls', 'rm', 'sh']],
  ['echo $(rm x)', ['echo', 'rm']],
  ['find . -exec rm {} \\;', ['find', 'rm']],
  ['env FOO=1 rm x', ['env', 'rm']],
  ['xargs rm', ['rm', 'xargs']],
  ['tar czf a.tgz x', ['tar']],
  ['"r""m" x', ['rm']],
  // quoting and escapes
  ["'rm' x", ['rm']],
  ['\\rm x', ['rm']],
  ['r\\m x', ['rm']],
  ["$'\\x72m' x", ['rm']],
  ["$'\\162m' x", ['rm']],
  ['$"rm" x', ['rm']],
  ['echo "a;b && c" \'| d\'', ['echo']],
  ['echo a\\;rm', ['echo']],
  ['ls \\\n  -la', ['ls']],
  ['/bin/rm -rf x', ['rm']],
  ['./node_modules/.bin/tsc -b', ['tsc']],
  ['"/usr/bin/rm" x', ['rm']],
  // lists, pipelines, background
  ['ls; rm x', ['ls', 'rm']],
  ['ls && rm x || echo no', ['echo', 'ls', 'rm']],
  ['cat f | grep x | sort -u', ['cat', 'grep', 'sort']],
  ['sleep 10 & rm x', ['rm', 'sleep']],
  ['ls\nrm x\n', ['ls', 'rm']],
  ['ls |& tee log', ['ls', 'tee']],
  ['! grep -q x f', ['grep']],
  // grouping and compound commands
  ['( cd /tmp && rm y ) | grep z &', ['cd', 'grep', 'rm']],
  ['{ ls; rm x; } > out', ['ls', 'rm']],
  ['if test -f x; then rm x; elif ls; then :; else cat y; fi', [':', 'cat', 'ls', 'rm', 'test']],
  ['for f in $(ls); do rm "$f"; done', ['ls', 'rm']],
  ['for f in a b\ndo\n  echo $f\ndone', ['echo']],
  ['for f; do echo "$f"; done', ['echo']],
  ['while read -r line; do echo "$line"; done < f.txt', ['echo', 'read']],
  ['until false; do sleep 1; done', ['false', 'sleep']],
  ['case "$x" in a|b) rm x;; (c) ls ;; *) ;; esac; echo done', ['echo', 'ls', 'rm']],
  ['case $x in\n  a)\n    rm x\n    ;;\nesac', ['rm']],
  ['case $x in a) (cd /tmp; rm y) ;; esac', ['cd', 'rm']],
  ['f() { rm x; }; f', ['f', 'rm']],
  ['function g { ls; }', ['ls']],
  ['function g() { ls; }', ['ls']],
  ['[[ -f x && $(rm y) ]] && ls', ['ls', 'rm']],
  ['(( i++ )); ls', ['ls']],
  ['for ((i=0; i<3; i++)); do ls; done', ['ls']],
  // substitutions everywhere
  ['echo `rm x`', ['echo', 'rm']],
  ['echo "$(rm x) `ls`"', ['echo', 'ls', 'rm']],
  ['echo $(echo $(rm x))', ['echo', 'rm']],
  ['echo "$(cat <<EOF\nhi\nEOF\n)"', ['cat', 'echo']],
  ['x=$(rm y)', ['rm']],
  ['A=b B=$(id) cmd arg', ['cmd', 'id']],
  ['x=(a b $(rm c)); ls', ['ls', 'rm']],
  ['echo ${x:-$(rm y)}', ['echo', 'rm']],
  ['echo $((1 + $(rm z)))', ['echo', 'rm']],
  ['cat <(rm x)', ['cat', 'rm']],
  ['echo hi > >(rm x)', ['echo', 'rm']],
  ['echo $(case x in a) rm y;; esac)', ['echo', 'rm']],
  ['ls > "$(rm x)"', ['ls', 'rm']],
  // redirections and here-documents
  ['ls 2>&1 >/dev/null', ['ls']],
  ['2>/dev/null ls', ['ls']],
  ['ls &> log', ['ls']],
  ['cat <<EOF > out\nhello $(whoami)\nEOF\nls', ['cat', 'ls', 'whoami']],
  ["cat <<'EOF'\n$(rm x)\nEOF\n", ['cat']],
  ['cat <<-EOF\n\tbody\n\tEOF\necho after', ['cat', 'echo']],
  ['cat <<A <<B\na\nA\nb `rm x`\nB\n', ['cat', 'rm']],
  ['grep x <<< "$(rm y)"', ['grep', 'rm']],
  // comments
  ['echo a # rm x', ['echo']],
  ['# rm x\nls', ['ls']],
  ['echo a#b', ['echo']],
  // wrappers
  ['sh -c \'sh -c "rm x"\'', ['rm', 'sh']],
  ['bash -lc "git status"', ['bash', 'git']],
  ['bash -e -o pipefail -c "make test"', ['bash', 'make']],
  ['dash -c ls', ['dash', 'ls']],
  ['env -i PATH=/bin A=1 rm x', ['env', 'rm']],
  ['env -u HOME -C /tmp rm x', ['env', 'rm']],
  ['env -S "rm -rf x"', ['env', 'rm']],
  ['xargs -0 -n 1 -I {} sh -c "rm {}"', ['rm', 'sh', 'xargs']],
  ['xargs -i rm {}', ['rm', 'xargs']],
  ['xargs --max-args 2 rm', ['rm', 'xargs']],
  ['xargs', ['echo', 'xargs']],
  ['nohup rm x &', ['nohup', 'rm']],
  ['timeout 5 rm x', ['rm', 'timeout']],
  ['timeout -s KILL -k 1 5s rm x', ['rm', 'timeout']],
  ['timeout --signal=KILL 5 rm x', ['rm', 'timeout']],
  ['nice rm x', ['nice', 'rm']],
  ['nice -n 10 rm x', ['nice', 'rm']],
  ['nice -10 rm x', ['nice', 'rm']],
  ['sudo rm x', ['rm', 'sudo']],
  ['sudo -u root -- rm x', ['rm', 'sudo']],
  ['sudo -E HOME=/root rm x', ['rm', 'sudo']],
  ['sudo -e /etc/hosts', ['sudo']],
  ['doas -u root rm x', ['doas', 'rm']],
  ['exec rm x', ['exec', 'rm']],
  ['exec -a name rm x', ['exec', 'rm']],
  ['exec > log', ['exec']],
  ['command rm x', ['command', 'rm']],
  ['command -v rm', ['command']],
  ['builtin echo x', ['builtin', 'echo']],
  ['time rm x', ['rm', 'time']],
  ['time -p rm x', ['rm', 'time']],
  ['/usr/bin/time -f "%e" -o t.txt rm x', ['rm', 'time']],
  ['busybox rm x', ['busybox', 'rm']],
  ['busybox sh -c "rm x"', ['busybox', 'rm', 'sh']],
  ['busybox --list', ['busybox']],
  ['find . -name "*.tmp" -exec rm -f {} +', ['find', 'rm']],
  ['find . -execdir sh -c \'rm "$1"\' _ {} \\; -exec ls {} \\;', ['find', 'ls', 'rm', 'sh']],
  ['find . -ok rm {} ";"', ['find', 'rm']],
  ['find . -delete', ['find']],
  ['stdbuf -o0 rm x', ['rm', 'stdbuf']],
  ['setsid rm x', ['rm', 'setsid']],
  ['ionice -c 3 rm x', ['ionice', 'rm']],
  ['taskset -c 0 rm x', ['rm', 'taskset']],
  ['chrt -f 10 rm x', ['chrt', 'rm']],
  ['chroot /mnt rm x', ['chroot', 'rm']],
  ['flock /tmp/l rm x', ['flock', 'rm']],
  ['flock /tmp/l -c "rm x"', ['flock', 'rm']],
  ['su -c "rm x" root', ['rm', 'su']],
  ['watch -n 1 ls -l', ['ls', 'watch']],
  ['trap "rm -f /tmp/x" EXIT', ['rm', 'trap']],
  ['trap - EXIT', ['trap']],
  ['nice nohup timeout 5 sudo env A=1 /bin/rm -rf /', ['env', 'nice', 'nohup', 'rm', 'sudo', 'timeout']],
  // edge cases
  ['', []],
  ['   \n\t ', []],
  ['ls; ; ', ['ls']],
  ['npm test -- --grep "rm x"', ['npm']],
  ['git commit -m "$(date)"', ['date', 'git']],
  ['echo {a,b}', ['echo']],
  ['python3 -c "import os; os.remove(\'x\')"', ['python3']],
];

/** [command, programs found, reason pattern] triples that must be reported as not analysable. */
const NOT_ANALYSABLE: [string, string[], RegExp][] = [
  ['$X foo', [], /"\$X" is only known at run time/],
  ['${CMD} foo', [], /only known at run time/],
  ['$(which rm) x', ['which'], /only known at run time/],
  ['`which rm` x', ['which'], /only known at run time/],
  ['"$tool" x', [], /only known at run time/],
  ['eval "rm x"', ['eval', 'rm'], /eval/],
  ['eval "$CMD"', ['eval'], /eval/],
  ['sh script.sh', ['sh'], /runs the script "script\.sh"/],
  ['bash ./deploy.sh --prod', ['bash'], /runs the script/],
  ['source env.sh; ls', ['ls', 'source'], /runs the script "env\.sh"/],
  ['. ./env.sh', ['.'], /runs the script/],
  ['curl -s x | bash', ['bash', 'curl'], /reads commands from standard input/],
  ['sh -s < cmds.txt', ['sh'], /standard input/],
  ['sh -c "$CMD"', ['sh'], /sh -c runs a command string only known at run time/],
  ['sh -c', ['sh'], /missing its command string/],
  ['xargs sh', ['sh', 'xargs'], /standard input/],
  ['env $PREFIX rm x', ['env'], /only known at run time/],
  ["echo 'unterminated", ['echo'], /single quote is never closed/],
  ['echo "unterminated', ['echo'], /double quote is never closed/],
  ['ls; echo $(rm x', ['echo', 'ls', 'rm'], /\$\(" is never closed/],
  ['echo `rm x', ['echo'], /backquote is never closed/],
  ['cat <<EOF\nno end', ['cat'], /here-document ended by "EOF" is never closed/],
  ['cat <<EOF', ['cat'], /here-document/],
  ['{rm,-rf,/}', [], /glob or brace expansion/],
  ['r* x', [], /glob or brace expansion/],
  ['/bin/r? x', [], /glob or brace expansion/],
  ['alias ls=rm; ls', ['alias', 'ls'], /alias/],
  ['ls )', ['ls'], /unexpected "\)"/],
  ['( ls', ['ls'], /never closed/],
  ['su root', ['su'], /standard input/],
  ['chroot /mnt', ['chroot'], /starts a shell/],
];

function check(actual: CommandAnalysis, programs: string[], label: string): void {
  assert.deepEqual(actual.programs, programs, `${label}: ${JSON.stringify(actual)}`);
}

test('commands that can be analysed yield every program they run', () => {
  for (const [command, programs] of ANALYSABLE) {
    const analysis = analyzeCommand({ command });
    check(analysis, programs, JSON.stringify(command));
    assert.equal(analysis.analysable, true, `${JSON.stringify(command)}: ${analysis.reasons.join('; ')}`);
    assert.deepEqual(analysis.reasons, []);
  }
});

test('commands that cannot be analysed say why and keep the programs found', () => {
  for (const [command, programs, reason] of NOT_ANALYSABLE) {
    const analysis = analyzeCommand({ command });
    check(analysis, programs, JSON.stringify(command));
    assert.equal(analysis.analysable, false, JSON.stringify(command));
    assert.ok(analysis.reasons.some((text) => reason.test(text)), `${JSON.stringify(command)}: ${analysis.reasons.join('; ')}`);
  }
});

test('argv is taken literally: no quoting, expansion or globbing', () => {
  assert.deepEqual(analyzeCommand({ argv: ['sh', '-c', 'ls && rm x'] }), { programs: ['ls', 'rm', 'sh'], analysable: true, reasons: [] });
  assert.deepEqual(analyzeCommand({ argv: ['/usr/bin/env', 'A=1', 'rm', 'x'] }).programs, ['env', 'rm']);
  assert.deepEqual(analyzeCommand({ argv: ['$X', '*'] }).programs, ['$X']);
  assert.deepEqual(analyzeCommand({ argv: ['rm x'] }).programs, ['rm x']);
  assert.deepEqual(analyzeCommand({ argv: ['A=b', 'ls'] }).programs, ['A=b']);
  assert.deepEqual(analyzeCommand({ argv: ['xargs', '-I{}', 'rm', '{}'] }).programs, ['rm', 'xargs']);
  assert.deepEqual(analyzeCommand({ argv: ['python3', 'a.py'] }), { programs: ['python3'], analysable: true, reasons: [] });
  assert.deepEqual(analyzeCommand({ argv: ['bash', 'a.sh'] }).analysable, false);
  assert.deepEqual(analyzeCommand({ argv: ['sh', '-c', 'rm', 'x'], command: 'ls' }).programs, ['rm', 'sh']);
});

test('an empty argv or no input at all is not analysable', () => {
  assert.equal(analyzeCommand({ argv: [] }).analysable, false);
  assert.equal(analyzeCommand({}).analysable, false);
});

test('programs are deduplicated and sorted; reasons are deduplicated', () => {
  const analysis = analyzeCommand({ command: 'rm a; ls; rm b; $X; $X' });
  assert.deepEqual(analysis.programs, ['ls', 'rm']);
  assert.equal(analysis.reasons.length, 1);
});

test('nesting is bounded', () => {
  // eval re-parses its joined arguments: one level deeper per eval, with no quoting to grow.
  const analysis = analyzeCommand({ command: `${'eval '.repeat(MAX_ANALYSIS_DEPTH + 2)}rm x` });
  assert.equal(analysis.analysable, false);
  assert.ok(analysis.reasons.some((reason) => /nested more than/.test(reason)), analysis.reasons.join('; '));
  assert.deepEqual(analyzeCommand({ command: "sh -c 'sh -c \"sh -c \\\"rm x\\\"\"'" }).programs, ['rm', 'sh']);
  const deep = analyzeCommand({ command: `${'echo $('.repeat(20000)}rm${')'.repeat(20000)}` });
  assert.equal(deep.analysable, false);
});

test('never throws on arbitrary input', () => {
  let seed = 42;
  const random = (): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const alphabet = ['a', 'rm', ' ', ';', '&', '|', '(', ')', '{', '}', '$', '`', '"', "'", '\\', '<', '>', '\n', '#', '=', 'if', 'case', 'in', 'esac', ';;', 'do', '$(', '<<', 'EOF', '*', '-c', 'sh'];
  for (let round = 0; round < 3000; round++) {
    let command = '';
    const length = Math.floor(random() * 30);
    for (let index = 0; index < length; index++) command += alphabet[Math.floor(random() * alphabet.length)] ?? '';
    const analysis = analyzeCommand({ command });
    assert.equal(analysis.analysable, analysis.reasons.length === 0, JSON.stringify(command));
  }
});
