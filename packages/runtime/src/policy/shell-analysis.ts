/**
 * Static analysis of a shell command: which programs would it run? Policies
 * match on the answer (`context.programs.contains("rm")`), so it looks through
 * quoting, substitutions and wrappers, and says so instead of guessing when a
 * command cannot be known before it runs (`$CMD x`, `eval`, `sh script.sh`).
 * A command string is read as the shell that runs it reads it: dash for
 * `/bin/sh -c` (the exec tool) and `sh -c`, bash only under `bash -c`; what
 * it cannot read exactly is not analysable (ADR 0022).
 */
import { resolveCommand, type ProgramCollector } from './command-wrappers.js';
import { type ShellDialect, ShellLexer, ShellSyntaxError, ShellUnmodelledError, type ShellLexerHooks, type ShellWord } from './shell-lexer.js';
import { ShellParser, type ShellCommandSink } from './shell-parser.js';

/** What a command would run, as far as can be told without running it. */
export interface CommandAnalysis {
  /** basenames of every program found, deduplicated and sorted; wrappers included (`sh`, `env`) */
  programs: string[];
  /** false when some part cannot be known statically; `programs` then holds what was found */
  analysable: boolean;
  /** why the command is not analysable; empty when it is */
  reasons: string[];
}

/** A command as a shell string (run with `sh -c`) or as an argv list (run directly). */
export interface CommandInput {
  command?: string;
  argv?: readonly string[];
}

/** Longest command string analysed; longer ones are reported as not analysable. */
export const MAX_ANALYSED_COMMAND_LENGTH = 256 * 1024;
/** How deeply `sh -c` strings and backquotes may nest before analysis gives up. */
export const MAX_ANALYSIS_DEPTH = 16;

/** Finds the programs a command would run; `argv` wins when both are given. */
export function analyzeCommand(input: CommandInput): CommandAnalysis {
  const analysis = new Analysis();
  if (input.argv !== undefined) {
    if (input.argv.length === 0) analysis.problem('argv is empty');
    else resolveCommand(input.argv.map(literalWord), analysis);
  } else if (input.command !== undefined) {
    analysis.analyseString(input.command);
  } else {
    analysis.problem('neither a command string nor argv was given');
  }
  return analysis.result();
}

class Analysis implements ProgramCollector, ShellCommandSink, ShellLexerHooks {
  readonly #programs = new Set<string>();
  readonly #reasons: string[] = [];
  #depth = 0;
  #dialect: ShellDialect = 'dash';

  get dialect(): ShellDialect {
    return this.#dialect;
  }

  program(name: string): void {
    this.#programs.add(name);
  }

  problem(reason: string): void {
    if (!this.#reasons.includes(reason)) this.#reasons.push(reason);
  }

  command(words: ShellWord[]): void {
    resolveCommand(words, this);
  }

  substitution(lexer: ShellLexer): void {
    new ShellParser(lexer, this).parseSubstitution();
  }

  nested(source: string): void {
    this.analyseString(source);
  }

  analyseString(source: string, dialect: ShellDialect = this.#dialect): void {
    if (source.length > MAX_ANALYSED_COMMAND_LENGTH) {
      return this.problem(`the command is longer than ${MAX_ANALYSED_COMMAND_LENGTH} characters`);
    }
    if (this.#depth >= MAX_ANALYSIS_DEPTH) {
      return this.problem(`commands are nested more than ${MAX_ANALYSIS_DEPTH} levels deep`);
    }
    this.#depth++;
    const outer = this.#dialect;
    this.#dialect = dialect;
    try {
      new ShellParser(new ShellLexer(source, this, dialect), this).parseProgram();
    } catch (error) {
      const shell = dialect === 'dash' ? '/bin/sh (dash)' : 'bash';
      if (error instanceof ShellUnmodelledError) this.problem(`not read exactly as ${shell} reads it: ${error.message}`);
      else if (error instanceof ShellSyntaxError) this.problem(`syntax error: ${error.message}`);
      else if (error instanceof RangeError) this.problem('the command is nested too deeply to analyse');
      else throw error;
    } finally {
      this.#dialect = outer;
      this.#depth--;
    }
  }

  result(): CommandAnalysis {
    return { programs: [...this.#programs].sort(), analysable: this.#reasons.length === 0, reasons: [...this.#reasons] };
  }
}

// argv words reach execve as they are: no quoting, expansion or globbing.
function literalWord(text: string): ShellWord {
  return { text, raw: text, quoted: true, dynamic: false, pattern: false, assignment: /^[A-Za-z_][A-Za-z0-9_]*=/.test(text) };
}
