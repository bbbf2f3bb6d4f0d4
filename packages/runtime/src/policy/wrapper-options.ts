/**
 * Reading the options of a wrapper command (`timeout -s KILL 5 CMD`) as
 * getopt would, from a table of which options take a value: an option not
 * in the table makes the command not analysable.
 */
import type { ProgramCollector } from './command-wrappers.js';
import type { ShellWord } from './shell-lexer.js';

/**
 * The options of a wrapper, as its getopt string declares them. An option
 * not listed makes the command not analysable: an unknown option may take a
 * value, and then the command is another word.
 */
export interface OptionSpec {
  /** short options without a value */
  flags?: string;
  /** short options that take a value (`-n 5` or `-n5`) */
  short?: string;
  /** short options whose value is optional, so only ever attached (`-i{}`) */
  optional?: string;
  /** long options without a value */
  longFlags?: readonly string[];
  /** long options that take a value (`--signal KILL` or `--signal=KILL`) */
  long?: readonly string[];
  /** long options whose value is optional, so only ever after `=` */
  longOptional?: readonly string[];
  /** `-N` (digits) is an option, as in `nice -10` */
  numeric?: boolean;
}

/** What a wrapper's options said. */
export interface ParsedOptions {
  /** index of the first operand */
  index: number;
  /** short option letters and long option names seen */
  flags: Set<string>;
  /** values of options that take one */
  values: Map<string, ShellWord>;
}

/**
 * Reads a wrapper's options up to its first operand, as getopt with a
 * leading `+` does (every wrapper here stops at the first operand). An
 * unknown option, or a word whose value is only known at run time or that a
 * glob or brace expansion may turn into several words, is a problem: the
 * command would then be another word. Returns undefined after a problem.
 */
export function options(words: readonly ShellWord[], start: number, out: ProgramCollector, name: string, spec: OptionSpec): ParsedOptions | undefined {
  const flags = new Set<string>();
  const values = new Map<string, ShellWord>();
  const unknown = (option: string): undefined => {
    out.problem(`${name}: the option ${JSON.stringify(option)} is not one the analysis knows`);
    return undefined;
  };
  const unsure = (word: ShellWord): undefined => {
    out.problem(`${name}: the argument ${display(word)} may become other words at run time`);
    return undefined;
  };
  let index = start;
  for (; index < words.length; index++) {
    const word = words[index] as ShellWord;
    if (word.dynamic || word.pattern) {
      // A dynamic operand is the command: resolveCommand reports it.
      if (word.text.startsWith('-') || word.raw.startsWith('-')) return unsure(word);
      break;
    }
    const text = word.text;
    if (text === '--') return { index: index + 1, flags, values };
    if (!text.startsWith('-') || text === '-') break;
    if (text.startsWith('--')) {
      const [long = text, inline] = text.split(/=(.*)/s);
      flags.add(long);
      if (spec.long?.includes(long) === true) {
        const value = inline !== undefined ? { ...word, text: inline } : words[++index];
        if (value === undefined) return unknown(long);
        if (value.dynamic || value.pattern) return unsure(value);
        values.set(long, value);
      } else if (spec.longOptional?.includes(long) === true) {
        if (inline !== undefined) values.set(long, { ...word, text: inline });
      } else if (spec.longFlags?.includes(long) !== true || inline !== undefined) {
        if (long !== '--help' && long !== '--version') return unknown(long);
      }
      continue;
    }
    if (spec.numeric === true && /^-[0-9]+$/.test(text)) continue;
    for (let at = 1; at < text.length; at++) {
      const letter = text[at] ?? '';
      flags.add(letter);
      if (spec.short?.includes(letter) === true) {
        const value = at + 1 < text.length ? { ...word, text: text.slice(at + 1) } : words[++index];
        if (value === undefined) return unknown(`-${letter}`);
        if (value.dynamic || value.pattern) return unsure(value);
        values.set(letter, value);
        break;
      }
      if (spec.optional?.includes(letter) === true) {
        values.set(letter, { ...word, text: text.slice(at + 1) });
        break;
      }
      if (spec.flags?.includes(letter) !== true) return unknown(`-${letter}`);
    }
  }
  return { index, flags, values };
}

/** A word as written, shortened, for a reason. */
export function display(word: ShellWord | undefined): string {
  if (word === undefined) return '(none)';
  const shown = word.raw === '' ? word.text : word.raw;
  return JSON.stringify(shown.length > 60 ? `${shown.slice(0, 57)}...` : shown);
}
