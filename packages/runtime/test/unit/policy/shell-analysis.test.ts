import { test } from 'node:test';
import assert from 'node:assert/strict';
import { analyzeCommand, MAX_ANALYSIS_DEPTH, type CommandAnalysis } from '../../../src/policy/shell-analysis.js';
import { ISSUE_22_COMMANDS } from './shell-corpus.js';

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
  // substitutions everywhere
  ['echo `rm x`', ['echo', 'rm']],
  ['echo "$(rm x) `ls`"', ['echo', 'ls', 'rm']],
  ['echo $(echo $(rm x))', ['echo', 'rm']],
  ['echo "$(cat <<EOF\nhi\nEOF\n)"', ['cat', 'echo']],
  ['x=$(rm y)', ['rm']],
  ['A=b B=$(id) cmd arg', ['cmd', 'id']],
  ['echo ${x:-$(rm y)}', ['echo', 'rm']],
  ['echo $((1 + $(rm z)))', ['echo', 'rm']],
  ['echo $(case x in a) rm y;; esac)', ['echo', 'rm']],
  ['ls > "$(rm x)"', ['ls', 'rm']],
  // redirections and here-documents
  ['ls 2>&1 >/dev/null', ['ls']],
  ['2>/dev/null ls', ['ls']],
  ['cat <<EOF > out\nhello $(whoami)\nEOF\nls', ['cat', 'ls', 'whoami']],
  ["cat <<'EOF'\n$(rm x)\nEOF\n", ['cat']],
  ['cat <<-EOF\n\tbody\n\tEOF\necho after', ['cat', 'echo']],
  ['cat <<A <<B\na\nA\nb `rm x`\nB\n', ['cat', 'rm']],
  // comments
  ['echo a # rm x', ['echo']],
  ['# rm x\nls', ['ls']],
  ['echo a#b', ['echo']],
  ['a+=b ls', ['a+=b']],
  // POSIX parameter expansions, read to the first unquoted "}" as dash does
  ['echo ${x:-a} ${#y} ${z%%.*} ${1} ${#} ${w:+"a b"} ${v:-\'}\'}; ls', ['echo', 'ls']],
  ['echo "${x:-$(rm y)}"', ['echo', 'rm']],
  ['echo $((1 + 2 * x)) $(( $y ))', ['echo']],
  // wrappers
  ['sh -c \'sh -c "rm x"\'', ['rm', 'sh']],
  ['bash -e -o pipefail -c "make test"', ['bash', 'make']],
  ['dash -c ls', ['dash', 'ls']],
  ['bash --norc --noprofile -c ls', ['bash', 'ls']],
  ['sh -eux -o noglob -c ls', ['ls', 'sh']],
  ['xargs --replace rm -f {}', ['rm', 'xargs']],
  ['xargs -I% -P 4 cp % /tmp', ['cp', 'xargs']],
  ['xargs sh -c \'rm "$@"\' _', ['rm', 'sh', 'xargs']],
  ['find . -execdir sh -c \'rm "$1"\' _ {} \\;', ['find', 'rm', 'sh']],
  ['env - PATH=/bin rm x', ['env', 'rm']],
  ['env -i PATH=/bin A=1 rm x', ['env', 'rm']],
  ['env -u HOME -C /tmp rm x', ['env', 'rm']],
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
  ['exec > log', ['exec']],
  ['command rm x', ['command', 'rm']],
  ['command -v rm', ['command']],
  ['builtin echo x', ['builtin', 'echo']],
  ['time rm x', ['rm', 'time']],
  ['time -p rm x', ['rm', 'time']],
  ['/usr/bin/time -f "%e" -o t.txt rm x', ['rm', 'time']],
  ['busybox rm x', ['busybox', 'rm']],
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
  // bash syntax under /bin/sh: dash reads it otherwise (or refuses it), so it is not read at all
  ["$'\\x72m' x", [], /"\$'" quoting is bash syntax/],
  ['$"rm" x', [], /"\$"" quoting is bash syntax/],
  ['ls |& tee log', ['ls'], /"\|&" is bash syntax/],
  ['function g { ls; }', [], /"function" is a bash keyword/],
  ['[[ -f x && $(rm y) ]] && ls', [], /"\[\[" is a bash keyword/],
  ['(( i++ )); ls', [], /"\(\(" is arithmetic in bash/],
  ['for ((i=0; i<3; i++)); do ls; done', [], /"for \(\(" is bash syntax/],
  ['x=(a b $(rm c)); ls', [], /array value/],
  ['cat <(rm x)', ['cat'], /"<\(" is bash syntax/],
  ['echo hi > >(rm x)', ['echo'], /">\(" is bash syntax/],
  ['ls &> log', ['ls'], /"&>" is bash syntax/],
  ['grep x <<< "$(rm y)"', ['grep'], /"<<<" is bash syntax/],
  ['case x in a) ls;& b) rm y;; esac', ['ls'], /";&" is bash syntax/],
  ['echo ${x/a/b}', ['echo'], /the operator "\/a\/b}"/],
  ['echo ${x:1:2}', ['echo'], /the operator/],
  ['echo ${!x}', ['echo'], /the operator "x}"/],
  // what it cannot read exactly: control characters, braces in ${…}, unknown options of wrappers, other shells
  ['ls\x0b; rm x', [], /control character U\+000B/],
  ['echo "${x:-\'a\'}"; ls', ['echo'], /a quote inside double quotes/],
  ['bash -lc "git status"', ['bash'], /bash -l reads start-up files/],
  ['bash -i -c ls', ['bash'], /bash -i reads start-up files/],
  ['sh --login -c ls', ['sh'], /"--login" is not one the analysis knows/],
  ['bash -O extglob -c ls', ['bash'], /option -O/],
  ['zsh -c "rm x"', ['zsh'], /grammar of zsh is not modelled/],
  ['busybox sh -c "rm x"', ['busybox', 'sh'], /busybox's shell is ash/],
  ['env -S "rm -rf x"', ['env'], /"-S" is not one the analysis knows/],
  ['env --split-string="rm -rf x"', ['env'], /"--split-string" is not one the analysis knows/],
  ['exec -a name rm x', ['exec'], /"-a" is not one the analysis knows/],
  ['timeout --frobnicate 5 rm x', ['timeout'], /"--frobnicate" is not one the analysis knows/],
  ['nice -n $N rm x', ['nice'], /may become other words/],
  ['xargs -0 -n 1 -I {} sh -c "rm {}"', ['sh', 'xargs'], /only known at run time/],
  ['find . -exec sh -c "rm {}" \\;', ['find', 'sh'], /only known at run time/],
  ['find . -name x -exec {} \\;', ['find'], /only known at run time/],
  ['xargs env', ['env', 'xargs'], /only known at run time/],
  ['xargs --frobnicate rm', ['xargs'], /"--frobnicate"/],
  ['flock /tmp/l -c "rm x"', ['flock', 'rm'], /shell chosen at run time/],
  ['su -c "rm x" root', ['rm', 'su'], /shell chosen at run time/],
  ['mapfile -C "rm x" -c 1 < f', ['mapfile'], /can run or change code/],
  ['hash -p /bin/rm ls; ls x', ['hash', 'ls'], /hash -p sets the file/],
  ['BASH_CMDS[ls]=/bin/rm; ls x', ['ls'], /glob or brace expansion/],
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

test('each command of issue 22 is not analysable, or lists rm', () => {
  for (const command of ISSUE_22_COMMANDS) {
    const analysis = analyzeCommand({ command });
    assert.ok(!analysis.analysable || analysis.programs.includes('rm'), `${JSON.stringify(command)}: ${JSON.stringify(analysis)}`);
  }
  // The ones no shell reads alike are refused outright; xargs --replace takes no value, so rm is its command.
  for (const command of ISSUE_22_COMMANDS.filter((command) => !command.includes('xargs'))) assert.equal(analyzeCommand({ command }).analysable, false, command);
  assert.deepEqual(analyzeCommand({ command: ISSUE_22_COMMANDS[6] ?? '' }).programs, ['echo', 'rm', 'xargs']);
});

test('bash -c is read as bash: the same strict reading, and what bash evaluates as code is refused', () => {
  assert.deepEqual(analyzeCommand({ argv: ['bash', '-c', 'ls && rm x'] }).programs, ['bash', 'ls', 'rm']);
  for (const command of ['x=1; echo $((x))', 'echo $(( $y + 1 ))', "printf -v 'a[$(rm x)]' 1", 'coproc rm x', '[[ -v a ]]', 'unset a[$i]']) {
    const analysis = analyzeCommand({ argv: ['bash', '-c', command] });
    assert.equal(analysis.analysable, false, command);
    assert.ok(analysis.reasons.some((reason) => /as bash reads it/.test(reason)), `${command}: ${analysis.reasons.join('; ')}`);
  }
  // A name only known at run time, given where bash takes a variable name (`y='a['; z='$(rm x)]'; test -v "$y$z"` runs rm).
  for (const command of ['test -v "$y$z"', '[ -v "$n" ]', 'unset "$n"', 'printf -v "$n" %s 1', 'read "$n"', 'local -i x=1']) {
    const analysis = analyzeCommand({ argv: ['bash', '-c', command] });
    assert.equal(analysis.analysable, false, command);
  }
  assert.equal(analyzeCommand({ argv: ['bash', '-c', 'printf "%s\\n" "$x"; test -n "$x"; read x'] }).analysable, true);
  assert.equal(analyzeCommand({ argv: ['sh', '-c', 'test -v "$n"; unset "$n"'] }).analysable, true);
  // dash reads $((x)) as the number in x: no code.
  assert.equal(analyzeCommand({ command: 'x=1; echo $((x))' }).analysable, true);
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
