/**
 * A parser for the shell language as dash reads it that finds every simple command: through
 * lists, pipelines, subshells, groups, if/while/until/for/case, function
 * definitions and substitutions. It does not build a tree: it only needs to
 * know which words are in command position, so it tracks that and the
 * parentheses that change what `)` means.
 */
import { type ShellLexer, ShellSyntaxError, type ShellToken, ShellUnmodelledError, type ShellWord } from './shell-lexer.js';

/** Receives what the parser finds. */
export interface ShellCommandSink {
  /** one simple command, leading assignments and redirections removed */
  command(words: ShellWord[]): void;
}

type Frame = 'subshell' | 'case';

const STAY_AT_START = new Set(['if', 'then', 'else', 'elif', 'do', 'while', 'until', '{', '!']);
/** Reserved words of bash that dash reads as command names: refused rather than read one way or the other. */
const BASH_KEYWORDS = new Set(['[[', ']]', 'function', 'select', 'coproc']);
const END_COMPOUND = new Set(['fi', 'done', '}']);
const CONTROL = new Set([';', '&', '&&', '||', '|', '\n']);

/** Parses one command string (or one substitution) and reports its simple commands. */
export class ShellParser {
  #peeked: ShellToken | undefined;
  #words: ShellWord[] = [];
  #atStart = true;
  #inPattern = false;
  readonly #frames: Frame[] = [];

  /** Parses tokens of `lexer`, reporting commands to `sink`. */
  constructor(
    private readonly lexer: ShellLexer,
    private readonly sink: ShellCommandSink,
  ) {}

  /** Parses to the end of the source. */
  parseProgram(): void {
    this.#run(false);
  }

  /** Parses up to and including the `)` that closes a `$(` already consumed by the lexer. */
  parseSubstitution(): void {
    this.#run(true);
  }

  #run(untilParen: boolean): void {
    try {
      for (;;) {
        const token = this.#next();
        if (token.kind === 'eof') {
          this.#flush();
          if (untilParen) throw new ShellSyntaxError('a "$(" is never closed');
          if (this.#frames.length > 0) throw new ShellSyntaxError(`a "${this.#frames.at(-1) === 'case' ? 'case' : '('}" is never closed`);
          return;
        }
        if (token.kind === 'word') this.#word(token.word);
        else if (token.kind === 'redirect') this.#redirect(token.op);
        else if (this.#operator(token, untilParen)) return;
      }
    } finally {
      // Commands seen before a syntax error still count.
      this.#flush();
    }
  }

  /** Returns true when the `)` closing the substitution was read. */
  #operator(token: Extract<ShellToken, { kind: 'op' }>, untilParen: boolean): boolean {
    const { op } = token;
    if (this.#inPattern) {
      if (op === ')') {
        this.#inPattern = false;
        this.#atStart = true;
      }
      return false;
    }
    if (op === '(') {
      this.#openParen(token);
      return false;
    }
    this.#flush();
    if (op === ')') {
      const frame = this.#frames.pop();
      if (frame === undefined && untilParen) return true;
      if (frame !== 'subshell') throw new ShellSyntaxError('unexpected ")"');
      this.#atStart = false;
    } else if (op === ';;') {
      if (this.#frames.at(-1) !== 'case') throw new ShellSyntaxError(`unexpected "${op}" outside case`);
      this.#inPattern = true;
    } else if (CONTROL.has(op)) {
      this.#atStart = true;
    }
    return false;
  }

  #openParen(token: ShellToken): void {
    if (this.#words.length === 1 && this.#words[0]?.assignment === false) {
      // `name() body`: a definition; the body's commands are still analysed.
      this.#expectOp(')');
      this.#words = [];
      this.#atStart = true;
      return;
    }
    if (this.#words.length > 0 || !this.#atStart) throw new ShellSyntaxError('unexpected "("');
    const following = this.#peek();
    if (following.kind === 'op' && following.op === '(' && following.start === token.end) {
      throw new ShellUnmodelledError('"((" is arithmetic in bash and two subshells in /bin/sh (dash)');
    }
    this.#frames.push('subshell');
  }

  #word(word: ShellWord): void {
    if (this.#inPattern) {
      if (isKeyword(word, 'esac')) this.#closeCase();
      return;
    }
    if (this.#atStart && this.#words.length === 0 && this.#keyword(word)) return;
    this.#words.push(word);
  }

  /** Handles a reserved word in command position; false when `word` is not one. */
  #keyword(word: ShellWord): boolean {
    if (word.quoted || word.dynamic) return false;
    const text = word.text;
    if (STAY_AT_START.has(text)) return true;
    if (BASH_KEYWORDS.has(text)) throw new ShellUnmodelledError(`"${text}" is a bash keyword; /bin/sh (dash) runs it as a command`);
    if (END_COMPOUND.has(text)) {
      this.#atStart = false;
      return true;
    }
    switch (text) {
      case 'esac':
        if (this.#frames.at(-1) !== 'case') throw new ShellSyntaxError('unexpected "esac"');
        this.#closeCase();
        return true;
      case 'for':
        this.#forHeader();
        return true;
      case 'case':
        this.#caseHeader();
        return true;
      default:
        return false;
    }
  }

  #forHeader(): void {
    if (this.#peekOp('(')) throw new ShellUnmodelledError('"for ((" is bash syntax; /bin/sh (dash) refuses it');
    this.#expectWord();
    while (this.#peekOp('\n')) this.#next();
    const next = this.#peek();
    if (next.kind === 'word' && isKeyword(next.word, 'in')) {
      this.#next();
      // The word list: substitutions in it were already analysed by the lexer.
      while (this.#peek().kind === 'word') this.#next();
    }
  }

  #caseHeader(): void {
    this.#expectWord();
    while (this.#peekOp('\n')) this.#next();
    const word = this.#expectWord();
    if (!isKeyword(word, 'in')) throw new ShellSyntaxError('expected "in" after "case WORD"');
    this.#frames.push('case');
    this.#inPattern = true;
  }

  #closeCase(): void {
    this.#frames.pop();
    this.#inPattern = false;
    this.#atStart = false;
  }

  #redirect(op: string): void {
    const target = this.#next();
    if (target.kind !== 'word') throw new ShellSyntaxError(`expected a file name after "${op}"`);
    if (op === '<<' || op === '<<-') this.lexer.queueHeredoc(target.word, op === '<<-');
  }

  #flush(): void {
    const first = this.#words.findIndex((word) => !word.assignment);
    if (first !== -1) this.sink.command(this.#words.slice(first));
    this.#words = [];
  }

  #expectWord(): ShellWord {
    const token = this.#next();
    if (token.kind !== 'word') throw new ShellSyntaxError('expected a word');
    return token.word;
  }

  #expectOp(op: string): void {
    const token = this.#next();
    if (token.kind !== 'op' || token.op !== op) throw new ShellSyntaxError(`expected "${op}"`);
  }

  #peekOp(op: string): boolean {
    const token = this.#peek();
    return token.kind === 'op' && token.op === op;
  }

  #peek(): ShellToken {
    this.#peeked ??= this.lexer.next();
    return this.#peeked;
  }

  #next(): ShellToken {
    const token = this.#peek();
    this.#peeked = undefined;
    return token;
  }
}

function isKeyword(word: ShellWord, keyword: string): boolean {
  return !word.quoted && !word.dynamic && word.text === keyword;
}
