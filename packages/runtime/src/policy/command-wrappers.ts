/**
 * Looking through commands that run other commands: `sh -c`, `env`, `xargs`,
 * `sudo`, `timeout`, `find -exec`, `busybox` and friends. Each wrapper knows
 * which of its options take a value, so `timeout -s KILL 5 rm x` finds `rm`.
 */
import { posix } from 'node:path';
import type { ShellWord } from './shell-lexer.js';

/** Receives programs found in one simple command. */
export interface ProgramCollector {
  program(name: string): void;
  /** something that cannot be known statically; makes the analysis non-analysable */
  problem(reason: string): void;
  /** analyse a command string this command would run (`sh -c STRING`) */
  analyseString(source: string): void;
}

/** Options of a wrapper: which take a value, and how many operands precede the command. */
interface OptionSpec {
  /** short options that take a value (`-n 5` or `-n5`) */
  short?: string;
  /** long options that take a value when written without `=` */
  long?: readonly string[];
}

type Handler = (words: readonly ShellWord[], next: number, out: ProgramCollector, name: string) => void;

const SHELLS = ['sh', 'bash', 'dash', 'zsh', 'ksh', 'ash', 'mksh', 'posh', 'yash'];

const HANDLERS: Readonly<Record<string, Handler>> = {
  ...Object.fromEntries(SHELLS.map((shell) => [shell, shellHandler])),
  env: envHandler,
  xargs: (words, next, out) => {
    const rest = skipOptions(words, next, {
      short: 'ILnPsdEa',
      long: ['--arg-file', '--delimiter', '--eof', '--replace', '--max-lines', '--max-args', '--max-procs', '--max-chars', '--process-slot-var'],
    });
    if (rest.index < words.length) resolveCommand(words, out, rest.index);
    else out.program('echo');
  },
  nohup: (words, next, out) => resolveCommand(words, out, skipOptions(words, next, {}).index),
  setsid: (words, next, out) => resolveCommand(words, out, skipOptions(words, next, {}).index),
  builtin: (words, next, out) => resolveCommand(words, out, next),
  exec: (words, next, out) => resolveCommand(words, out, skipOptions(words, next, { short: 'a' }).index),
  nice: (words, next, out) => resolveCommand(words, out, skipOptions(words, next, { short: 'n', long: ['--adjustment'] }).index),
  stdbuf: (words, next, out) => resolveCommand(words, out, skipOptions(words, next, { short: 'ioe', long: ['--input', '--output', '--error'] }).index),
  ionice: (words, next, out) => resolveCommand(words, out, skipOptions(words, next, { short: 'cnp', long: ['--class', '--classdata', '--pid'] }).index),
  doas: (words, next, out) => resolveCommand(words, out, skipOptions(words, next, { short: 'uC' }).index),
  time: (words, next, out) => resolveCommand(words, out, skipOptions(words, next, { short: 'fo', long: ['--format', '--output'] }).index),
  timeout: (words, next, out) => {
    const rest = skipOptions(words, next, { short: 'sk', long: ['--signal', '--kill-after'] });
    resolveCommand(words, out, rest.index + 1);
  },
  taskset: (words, next, out) => {
    const rest = skipOptions(words, next, {});
    if (!rest.flags.has('p') && !rest.flags.has('--pid')) resolveCommand(words, out, rest.index + 1);
  },
  chrt: (words, next, out) => {
    const rest = skipOptions(words, next, { short: 'TPD', long: ['--sched-runtime', '--sched-period', '--sched-deadline'] });
    if (!rest.flags.has('p') && !rest.flags.has('--pid')) resolveCommand(words, out, rest.index + 1);
  },
  chroot: (words, next, out, name) => {
    const rest = skipOptions(words, next, { long: ['--userspec', '--groups'] });
    if (rest.index + 1 < words.length) resolveCommand(words, out, rest.index + 1);
    else out.problem(`${name} without a command starts a shell that reads standard input`);
  },
  command: (words, next, out) => {
    const rest = skipOptions(words, next, {});
    // `command -v rm` only looks rm up.
    if (!rest.flags.has('v') && !rest.flags.has('V')) resolveCommand(words, out, rest.index);
  },
  sudo: (words, next, out) => {
    const rest = skipOptions(words, next, { short: 'CDghpRrtTUu', long: ['--chdir', '--close-from', '--group', '--host', '--prompt', '--chroot', '--role', '--type', '--command-timeout', '--other-user', '--user'] });
    if (rest.flags.has('e') || rest.flags.has('--edit')) return;
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
    resolveCommand(words, out, skipOptions(words, next, { short: 'wE', long: ['--timeout', '--conflict-exit-code'] }).index + 1);
  },
  watch: (words, next, out) => {
    const rest = skipOptions(words, next, { short: 'nq', long: ['--interval', '--equexit'] });
    if (rest.flags.has('x') || rest.flags.has('--exec')) return resolveCommand(words, out, rest.index);
    joinAndAnalyse(words.slice(rest.index), out, 'watch');
  },
  busybox: (words, next, out) => {
    if (words[next]?.text.startsWith('-') !== true) resolveCommand(words, out, next);
  },
  find: findHandler,
  eval: (words, next, out) => {
    out.problem('eval runs a string assembled at run time');
    joinAndAnalyse(words.slice(next), out, 'eval');
  },
  source: (words, next, out, name) => out.problem(`${name} runs the script ${display(words[next])}, which cannot be analysed`),
  '.': (words, next, out, name) => out.problem(`${name} runs the script ${display(words[next])}, which cannot be analysed`),
  alias: (_words, _next, out) => out.problem('alias changes what later command names run'),
  trap: (words, next, out) => {
    const rest = skipOptions(words, next, {});
    const action = words[rest.index];
    if (action !== undefined && rest.index + 1 < words.length && action.text !== '-') analyseWord(action, out, 'trap');
  },
};

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

interface ParsedOptions {
  /** index of the first operand */
  index: number;
  /** short option letters and long option names seen */
  flags: Set<string>;
  /** values of options that take one */
  values: Map<string, ShellWord>;
}

function skipOptions(words: readonly ShellWord[], start: number, spec: OptionSpec): ParsedOptions {
  const flags = new Set<string>();
  const values = new Map<string, ShellWord>();
  let index = start;
  for (; index < words.length; index++) {
    const word = words[index];
    if (word === undefined || word.dynamic) break;
    const text = word.text;
    if (text === '--') return { index: index + 1, flags, values };
    if (!text.startsWith('-') || text === '-') break;
    if (text.startsWith('--')) {
      const [long = text, inline] = text.split(/=(.*)/s);
      flags.add(long);
      if (inline !== undefined) values.set(long, { ...word, text: inline });
      else if (spec.long?.includes(long) === true) {
        index++;
        if (words[index] !== undefined) values.set(long, words[index] as ShellWord);
      }
      continue;
    }
    for (let at = 1; at < text.length; at++) {
      const letter = text[at] ?? '';
      flags.add(letter);
      if (spec.short?.includes(letter) !== true) continue;
      if (at + 1 < text.length) values.set(letter, { ...word, text: text.slice(at + 1) });
      else if (words[index + 1] !== undefined) values.set(letter, words[++index] as ShellWord);
      break;
    }
  }
  return { index, flags, values };
}

function shellHandler(words: readonly ShellWord[], next: number, out: ProgramCollector, name: string): void {
  let hasCommand = false;
  let index = next;
  for (; index < words.length; index++) {
    const word = words[index] as ShellWord;
    if (word.dynamic) {
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
      if (text === '--rcfile' || text === '--init-file') index++;
      continue;
    }
    if (!/^[-+]./.test(text)) break;
    if (text.includes('c')) hasCommand = true;
    if (/[oO]/.test(text)) index++;
  }
  const operand = words[index];
  if (hasCommand) {
    if (operand === undefined) return out.problem(`${name} -c is missing its command string`);
    return analyseWord(operand, out, `${name} -c`);
  }
  if (operand !== undefined) return out.problem(`${name} runs the script ${display(operand)}, which cannot be analysed`);
  out.problem(`${name} reads commands from standard input`);
}

function envHandler(words: readonly ShellWord[], next: number, out: ProgramCollector): void {
  const rest = skipOptions(words, next, { short: 'uCPS', long: ['--unset', '--chdir', '--split-string', '--block-signal', '--default-signal', '--ignore-signal'] });
  const split = rest.values.get('S') ?? rest.values.get('--split-string');
  if (split !== undefined) return analyseWord(split, out, 'env -S');
  let index = rest.index;
  while (words[index]?.assignment === true || (words[index]?.text.includes('=') === true && !words[index]?.dynamic)) index++;
  resolveCommand(words, out, index);
}

function stringOptionHandler(words: readonly ShellWord[], next: number, out: ProgramCollector, name: string): void {
  for (let index = next; index < words.length; index++) {
    const text = words[index]?.text ?? '';
    if (text.startsWith('--command=')) return analyseWord({ ...(words[index] as ShellWord), text: text.slice(10) }, out, `${name} -c`);
    if (text === '--command' || /^-[A-Za-z]*c$/.test(text)) {
      const string = words[index + 1];
      return string === undefined ? out.problem(`${name} -c is missing its command string`) : analyseWord(string, out, `${name} -c`);
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
    resolveCommand(words.slice(start, end), out);
    index = end;
  }
}

function analyseWord(word: ShellWord, out: ProgramCollector, what: string): void {
  if (word.dynamic) return out.problem(`${what} runs a command string only known at run time: ${display(word)}`);
  out.analyseString(word.text);
}

function joinAndAnalyse(words: readonly ShellWord[], out: ProgramCollector, what: string): void {
  const dynamic = words.find((word) => word.dynamic);
  if (dynamic !== undefined) return out.problem(`${what} runs a command string only known at run time: ${display(dynamic)}`);
  out.analyseString(words.map((word) => word.text).join(' '));
}

function display(word: ShellWord | undefined): string {
  if (word === undefined) return '(none)';
  const shown = word.raw === '' ? word.text : word.raw;
  return JSON.stringify(shown.length > 60 ? `${shown.slice(0, 57)}...` : shown);
}
