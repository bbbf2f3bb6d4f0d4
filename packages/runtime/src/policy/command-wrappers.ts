/**
 * Looking through commands that run other commands: `sh -c`, `env`, `xargs`,
 * `sudo`, `timeout`, `find -exec`, `busybox` and friends. Each wrapper knows
 * which of its options take a value, so `timeout -s KILL 5 rm x` finds `rm`.
 */
import { posix } from 'node:path';
import type { ShellDialect, ShellWord } from './shell-lexer.js';
import { display, options, type ParsedOptions } from './wrapper-options.js';

/** Receives programs found in one simple command. */
export interface ProgramCollector {
  program(name: string): void;
  /** something that cannot be known statically; makes the analysis non-analysable */
  problem(reason: string): void;
  /** analyse a command string this command would run (`sh -c STRING`), read as `dialect` reads it (default: the current one) */
  analyseString(source: string, dialect?: ShellDialect): void;
  /** the shell reading the command at hand */
  readonly dialect: ShellDialect;
}

type Handler = (words: readonly ShellWord[], next: number, out: ProgramCollector, name: string) => void;

/** Shells whose grammar the analysis reads: dash (Debian's sh) and bash. */
const ANALYSED_SHELLS: Readonly<Record<string, ShellDialect>> = { sh: 'dash', dash: 'dash', bash: 'bash' };
/** Shells whose grammar it does not model: a command for one of them is not analysable. */
const OTHER_SHELLS = ['zsh', 'ksh', 'ash', 'mksh', 'posh', 'yash', 'csh', 'tcsh', 'fish', 'ksh93', 'pdksh', 'rbash'];
/** `set -o` names that change neither the grammar nor the start-up files. */
const SAFE_SHELL_OPTIONS = new Set(['errexit', 'nounset', 'xtrace', 'verbose', 'pipefail', 'noglob', 'noclobber', 'allexport', 'noexec']);
/** Commands that run code given to them as data, which no reading of the command line can see. */
const CODE_RUNNING_BUILTINS = ['let', 'mapfile', 'readarray', 'declare', 'typeset', 'enable', 'complete', 'compgen', 'bind', 'fc', 'shopt', 'caller'];

const HANDLERS: Readonly<Record<string, Handler>> = {
  ...Object.fromEntries(Object.keys(ANALYSED_SHELLS).map((shell) => [shell, shellHandler])),
  ...Object.fromEntries(OTHER_SHELLS.map((shell) => [shell, (_words: readonly ShellWord[], _next: number, out: ProgramCollector, name: string) => out.problem(`the grammar of ${name} is not modelled (only sh as dash reads it, and bash)`)])),
  ...Object.fromEntries(CODE_RUNNING_BUILTINS.map((builtin) => [builtin, (_words: readonly ShellWord[], _next: number, out: ProgramCollector, name: string) => out.problem(`${name} can run or change code given to it as data`)])),
  env: envHandler,
  xargs: xargsHandler,
  nohup: (words, next, out, name) => wrapped(words, out, options(words, next, out, name, {}), 0),
  setsid: (words, next, out, name) => wrapped(words, out, options(words, next, out, name, { flags: 'cfw', longFlags: ['--ctty', '--fork', '--wait'] }), 0),
  builtin: (words, next, out) => resolveCommand(words, out, next),
  // dash's exec takes no options (bash's -a, -c and -l are refused by the unknown-option rule).
  exec: (words, next, out, name) => wrapped(words, out, options(words, next, out, name, {}), 0),
  nice: (words, next, out, name) => wrapped(words, out, options(words, next, out, name, { short: 'n', long: ['--adjustment'], numeric: true }), 0),
  stdbuf: (words, next, out, name) => wrapped(words, out, options(words, next, out, name, { short: 'ioe', long: ['--input', '--output', '--error'] }), 0),
  ionice: (words, next, out, name) => {
    const rest = options(words, next, out, name, { flags: 't', short: 'cnpPu', long: ['--class', '--classdata', '--pid', '--pgid', '--uid'], longFlags: ['--ignore'] });
    if (rest !== undefined && !['p', 'P', 'u', '--pid', '--pgid', '--uid'].some((flag) => rest.flags.has(flag))) resolveCommand(words, out, rest.index);
  },
  doas: (words, next, out, name) => wrapped(words, out, options(words, next, out, name, { flags: 'n', short: 'uC' }), 0),
  time: (words, next, out, name) =>
    wrapped(words, out, options(words, next, out, name, { flags: 'apqvV', short: 'fo', long: ['--format', '--output'], longFlags: ['--append', '--portability', '--quiet', '--verbose'] }), 0),
  timeout: (words, next, out, name) =>
    wrapped(words, out, options(words, next, out, name, { flags: 'v', short: 'sk', long: ['--signal', '--kill-after'], longFlags: ['--foreground', '--preserve-status', '--verbose'] }), 1),
  taskset: (words, next, out, name) => {
    const rest = options(words, next, out, name, { flags: 'acp', longFlags: ['--all-tasks', '--cpu-list', '--pid'] });
    if (rest !== undefined && !rest.flags.has('p') && !rest.flags.has('--pid')) resolveCommand(words, out, rest.index + 1);
  },
  chrt: (words, next, out, name) => {
    const rest = options(words, next, out, name, {
      flags: 'abdefimoprRv',
      short: 'TPD',
      long: ['--sched-runtime', '--sched-period', '--sched-deadline'],
      longFlags: ['--all-tasks', '--batch', '--deadline', '--fifo', '--idle', '--max', '--other', '--pid', '--rr', '--reset-on-fork', '--verbose'],
    });
    if (rest !== undefined && !rest.flags.has('p') && !rest.flags.has('--pid')) resolveCommand(words, out, rest.index + 1);
  },
  chroot: (words, next, out, name) => {
    const rest = options(words, next, out, name, { long: ['--userspec', '--groups'], longFlags: ['--skip-chdir'] });
    if (rest === undefined) return;
    if (rest.index + 1 < words.length) resolveCommand(words, out, rest.index + 1);
    else out.problem(`${name} without a command starts a shell that reads standard input`);
  },
  command: (words, next, out, name) => {
    const rest = options(words, next, out, name, { flags: 'pvV' });
    // `command -v rm` only looks rm up.
    if (rest !== undefined && !rest.flags.has('v') && !rest.flags.has('V')) resolveCommand(words, out, rest.index);
  },
  sudo: (words, next, out, name) => {
    const rest = options(words, next, out, name, {
      flags: 'AbBeEHhKklNnPSVv',
      short: 'CDgpRrtTUu',
      long: ['--chdir', '--close-from', '--group', '--host', '--prompt', '--chroot', '--role', '--type', '--command-timeout', '--other-user', '--user'],
      longFlags: ['--askpass', '--background', '--bell', '--edit', '--set-home', '--remove-timestamp', '--reset-timestamp', '--non-interactive', '--preserve-groups', '--stdin', '--list', '--validate', '--version', '--help'],
      longOptional: ['--preserve-env'],
    });
    if (rest === undefined || rest.flags.has('e') || rest.flags.has('--edit')) return;
    let index = rest.index;
    while (words[index]?.assignment === true) index++;
    resolveCommand(words, out, index);
  },
  su: stringOptionHandler,
  runuser: stringOptionHandler,
  flock: (words, next, out, name) => {
    // `flock FILE -c STRING` puts the option after the operand.
    if (words.slice(next).some((word) => word.text === '-c' || word.text.startsWith('--command'))) {
      return stringOptionHandler(words, next, out, name);
    }
    const rest = options(words, next, out, name, {
      flags: 'sexnouFhV',
      short: 'wE',
      long: ['--timeout', '--conflict-exit-code'],
      longFlags: ['--shared', '--exclusive', '--nonblock', '--nb', '--close', '--unlock', '--no-fork', '--verbose'],
    });
    wrapped(words, out, rest, 1);
  },
  watch: (words, next, out, name) => {
    const rest = options(words, next, out, name, {
      flags: 'bceghptwx',
      short: 'nq',
      optional: 'd',
      long: ['--interval', '--equexit'],
      longFlags: ['--beep', '--color', '--no-color', '--errexit', '--chgexit', '--exec', '--no-title', '--precise', '--no-wrap', '--no-linewrap'],
      longOptional: ['--differences'],
    });
    if (rest === undefined) return;
    if (rest.flags.has('x') || rest.flags.has('--exec')) return resolveCommand(words, out, rest.index);
    joinAndAnalyse(words.slice(rest.index), out, 'watch', 'dash');
  },
  busybox: (words, next, out) => {
    const applet = words[next];
    if (applet === undefined || applet.text.startsWith('-')) return;
    if (!applet.dynamic && posix.basename(applet.text) in ANALYSED_SHELLS) {
      out.program(posix.basename(applet.text));
      return out.problem("busybox's shell is ash, whose grammar is not modelled");
    }
    resolveCommand(words, out, next);
  },
  find: findHandler,
  eval: (words, next, out) => {
    out.problem('eval runs a string assembled at run time');
    joinAndAnalyse(words.slice(next), out, 'eval');
  },
  source: (words, next, out, name) => out.problem(`${name} runs the script ${display(words[next])}, which cannot be analysed`),
  '.': (words, next, out, name) => out.problem(`${name} runs the script ${display(words[next])}, which cannot be analysed`),
  alias: (_words, _next, out) => out.problem('alias changes what later command names run'),
  // bash's `local -i x=$y` evaluates the value of y as arithmetic, array subscripts (and their substitutions) included.
  local: (words, next, out, name) => {
    if (words.slice(next).some((word) => /^[-+][A-Za-z]*i/.test(word.text))) out.problem(`${name} -i evaluates values as arithmetic, which runs substitutions in bash`);
    namesOnlyKnownAtRunTime(words, next, out, name);
  },
  ...Object.fromEntries(['unset', 'read', 'export', 'readonly', 'getopts', 'wait'].map((builtin) => [builtin, namesOnlyKnownAtRunTime])),
  printf: (words, next, out, name) => {
    if (words.slice(next).some((word) => /^-[A-Za-z]*v/.test(word.text))) namesOnlyKnownAtRunTime(words, next, out, name);
  },
  ...Object.fromEntries(
    ['test', '['].map((builtin) => [
      builtin,
      (words: readonly ShellWord[], next: number, out: ProgramCollector, name: string) => {
        if (words.slice(next).some((word) => word.text === '-v' || word.text === '-R')) namesOnlyKnownAtRunTime(words, next, out, name);
      },
    ]),
  ),
  // `hash -p /bin/rm ls` (bash) makes ls run rm.
  hash: (words, next, out, name) => {
    if (words.slice(next).some((word) => /^-[A-Za-z]*p/.test(word.text) || word.dynamic)) out.problem(`${name} -p sets the file a command name runs`);
  },
  trap: (words, next, out, name) => {
    const rest = options(words, next, out, name, { flags: 'lp' });
    const action = rest === undefined ? undefined : words[rest.index];
    if (rest !== undefined && action !== undefined && rest.index + 1 < words.length && action.text !== '-') analyseWord(action, out, 'trap');
  },
};

/**
 * bash evaluates an array subscript in a variable name given as data
 * (`unset "$n"`, `test -v "$n"`, `printf -v "$n"`), substitutions included:
 * `n='a[$(rm x)]'` runs rm. Under bash, such a name only known at run time is a problem.
 */
function namesOnlyKnownAtRunTime(words: readonly ShellWord[], next: number, out: ProgramCollector, name: string): void {
  if (out.dialect !== 'bash') return;
  const dynamic = words.slice(next).find((word) => word.dynamic);
  if (dynamic !== undefined) out.problem(`${name} under bash may evaluate ${display(dynamic)} as a name with an array subscript, substitutions included`);
}

/** Records the program run by `words[start]` and, for wrappers, the programs it runs. */
export function resolveCommand(words: readonly ShellWord[], out: ProgramCollector, start = 0): void {
  const word = words[start];
  if (word === undefined) return;
  if (word.dynamic) return out.problem(`the program name ${display(word)} is only known at run time`);
  if (word.pattern) return out.problem(`the program name ${display(word)} is a glob or brace expansion`);
  const name = posix.basename(word.text);
  if (name === '') return;
  out.program(name);
  HANDLERS[name]?.(words, start + 1, out, name);
}

/** Resolves the command `skip` operands after a wrapper's options (`timeout 5 CMD`). */
function wrapped(words: readonly ShellWord[], out: ProgramCollector, rest: ParsedOptions | undefined, skip: number): void {
  if (rest === undefined) return;
  for (let index = rest.index; index < rest.index + skip && index < words.length; index++) {
    const operand = words[index] as ShellWord;
    if (operand.dynamic || operand.pattern) return out.problem(`the argument ${display(operand)} may become other words at run time`);
  }
  resolveCommand(words, out, rest.index + skip);
}

// `sh [options] -c STRING [NAME [ARGS]]`: options that change neither the
// grammar nor the files read at start-up; a login (-l) or interactive (-i)
// shell reads profile files first, and `-O`, `--posix` change the grammar.
function shellHandler(words: readonly ShellWord[], next: number, out: ProgramCollector, name: string): void {
  const dialect = ANALYSED_SHELLS[name] ?? 'dash';
  let hasCommand = false;
  let index = next;
  for (; index < words.length; index++) {
    const word = words[index] as ShellWord;
    if (word.dynamic || word.pattern) {
      if (hasCommand) break;
      return out.problem(`${name} is given a script or options only known at run time: ${display(word)}`);
    }
    const text = word.text;
    if (text === '--' || text === '-') {
      index++;
      break;
    }
    if (text === '--version' || text === '--help') return;
    if (text.startsWith('--')) {
      if (dialect === 'bash' && (text === '--norc' || text === '--noprofile')) continue;
      return out.problem(`${name}: the option ${JSON.stringify(text)} is not one the analysis knows`);
    }
    if (!/^[-+]./.test(text)) break;
    for (const letter of text.slice(1)) {
      if (letter === 'c' && text.startsWith('-')) hasCommand = true;
      else if (letter === 'o') {
        const option = words[++index];
        if (option === undefined || !SAFE_SHELL_OPTIONS.has(option.text) || option.dynamic) {
          return out.problem(`${name}: the option -o ${display(option)} is not one the analysis knows`);
        }
      } else if (letter === 's') return out.problem(`${name} -s reads commands from standard input`);
      else if (letter === 'l' || letter === 'i') return out.problem(`${name} -${letter} reads start-up files before the command`);
      else if (!'aCefnuvx'.includes(letter)) return out.problem(`${name}: the option -${letter} is not one the analysis knows`);
    }
  }
  const operand = words[index];
  if (hasCommand) {
    if (operand === undefined) return out.problem(`${name} -c is missing its command string`);
    if (operand.dynamic) return out.problem(`${name} -c runs a command string only known at run time: ${display(operand)}`);
    return out.analyseString(operand.text, dialect);
  }
  if (operand !== undefined) return out.problem(`${name} runs the script ${display(operand)}, which cannot be analysed`);
  out.problem(`${name} reads commands from standard input`);
}

function envHandler(words: readonly ShellWord[], next: number, out: ProgramCollector, name: string): void {
  // env -S (--split-string) splits its argument by rules of its own (`\_` is a blank): an unknown option here.
  const rest = options(words, next, out, name, {
    flags: 'i0v',
    short: 'uC',
    long: ['--unset', '--chdir'],
    longFlags: ['--ignore-environment', '--null', '--debug', '--list-signal-handling'],
    longOptional: ['--block-signal', '--default-signal', '--ignore-signal'],
  });
  if (rest === undefined) return;
  let index = rest.index;
  // `env -` is `env -i`.
  if (words[index]?.text === '-' && words[index]?.dynamic === false) index++;
  for (; index < words.length; index++) {
    const word = words[index] as ShellWord;
    if (word.pattern) return out.problem(`env: the argument ${display(word)} may become other words at run time`);
    if (!(word.assignment || (word.text.includes('=') && !word.dynamic))) break;
  }
  resolveCommand(words, out, index);
}

function xargsHandler(words: readonly ShellWord[], next: number, out: ProgramCollector, name: string): void {
  const rest = options(words, next, out, name, {
    flags: '0oprtx',
    short: 'aEIdLnPs',
    optional: 'eil',
    long: ['--arg-file', '--delimiter', '--max-args', '--max-procs', '--max-chars', '--process-slot-var'],
    longFlags: ['--null', '--no-run-if-empty', '--verbose', '--interactive', '--exit', '--open-tty', '--show-limits'],
    longOptional: ['--eof', '--replace', '--max-lines'],
  });
  if (rest === undefined) return;
  if (rest.index >= words.length) return out.program('echo');
  const replacing = rest.flags.has('I') || rest.flags.has('i') || rest.flags.has('--replace');
  const replace = rest.values.get('I')?.text ?? rest.values.get('i')?.text ?? rest.values.get('--replace')?.text ?? '';
  const marker = !replacing ? undefined : replace === '' ? '{}' : replace;
  // What xargs puts in from its input is data only known at run time: inside words it replaces, or as words appended at the end.
  const command = words.slice(rest.index).map((word) => (marker !== undefined && word.text.includes(marker) ? { ...word, dynamic: true } : word));
  if (marker === undefined) command.push(INPUT_WORD);
  resolveCommand(command, out);
}

/** The arguments xargs appends from its input. */
const INPUT_WORD: ShellWord = { text: '', raw: '(arguments from standard input)', quoted: false, dynamic: true, pattern: false, assignment: false };

// su, runuser and flock -c hand the string to a shell chosen at run time
// (the user's login shell, $SHELL): its programs are listed, but not as dash's.
function stringOptionHandler(words: readonly ShellWord[], next: number, out: ProgramCollector, name: string): void {
  const check = (word: ShellWord): void => {
    out.problem(`${name} -c runs its string with a shell chosen at run time, whose grammar is not known`);
    analyseWord(word, out, `${name} -c`);
  };
  for (let index = next; index < words.length; index++) {
    const text = words[index]?.text ?? '';
    if (text.startsWith('--command=')) return check({ ...(words[index] as ShellWord), text: text.slice(10) });
    if (text === '--command' || /^-[A-Za-z]*c$/.test(text)) {
      const string = words[index + 1];
      return string === undefined ? out.problem(`${name} -c is missing its command string`) : check(string);
    }
  }
  out.problem(`${name} without -c starts a shell that reads standard input`);
}

function findHandler(words: readonly ShellWord[], next: number, out: ProgramCollector): void {
  for (let index = next; index < words.length; index++) {
    const text = words[index]?.text;
    if (text !== '-exec' && text !== '-execdir' && text !== '-ok' && text !== '-okdir') continue;
    const start = index + 1;
    let end = start;
    while (end < words.length && words[end]?.text !== ';' && !(words[end]?.text === '+' && words[end - 1]?.text === '{}')) end++;
    // find puts each file name in place of `{}`, inside words too: data only known at run time.
    resolveCommand(
      words.slice(start, end).map((word) => (word.text.includes('{}') ? { ...word, dynamic: true } : word)),
      out,
    );
    index = end;
  }
}

function analyseWord(word: ShellWord, out: ProgramCollector, what: string): void {
  if (word.dynamic) return out.problem(`${what} runs a command string only known at run time: ${display(word)}`);
  out.analyseString(word.text);
}

function joinAndAnalyse(words: readonly ShellWord[], out: ProgramCollector, what: string, dialect?: ShellDialect): void {
  const dynamic = words.find((word) => word.dynamic);
  if (dynamic !== undefined) return out.problem(`${what} runs a command string only known at run time: ${display(dynamic)}`);
  out.analyseString(
    words.map((word) => word.text).join(' '),
    dialect,
  );
}
