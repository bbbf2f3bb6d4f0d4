/**
 * Tokenizer for POSIX sh (plus the bash forms agents write: `$'…'`, `<(…)`,
 * `&>`, `|&`). Quote removal happens here, so `"r""m"` is the word `rm`.
 * Command substitutions are handed to hooks as they are met, so a program
 * inside `$(…)`, backticks or a here-document body is never missed.
 */

/** One word after quote removal, and what the shell would still do to it. */
export interface ShellWord {
  /** the text once quotes are removed; expansions contribute nothing */
  text: string;
  /** the word as written */
  raw: string;
  /** some part was quoted or escaped */
  quoted: boolean;
  /** contains a parameter, command or arithmetic expansion: its value is only known at run time */
  dynamic: boolean;
  /** unquoted glob (`* ? [`) or brace expansion (`{a,b}`): may become other words */
  pattern: boolean;
  /** starts with an unquoted `NAME=` (or `NAME+=`) */
  assignment: boolean;
}

/** A token: a word, an operator, a redirection operator, or the end. */
export type ShellToken =
  | { kind: 'word'; word: ShellWord; start: number; end: number }
  | { kind: 'op'; op: string; start: number; end: number }
  | { kind: 'redirect'; op: string; start: number; end: number }
  | { kind: 'eof'; start: number; end: number };

/** What the lexer asks of its parser. */
export interface ShellLexerHooks {
  /** parse commands from `lexer.position` up to and including the `)` closing a `$(` or `<(` */
  substitution(lexer: ShellLexer): void;
  /** analyse a separate command string (the body of backticks) */
  nested(source: string): void;
}

/** A construct the lexer cannot read: an unterminated quote, substitution or here-document. */
export class ShellSyntaxError extends Error {
  override name = 'ShellSyntaxError';
}

const OPERATORS = [';;&', '&&', '||', ';;', ';&', '|&', '|', '&', ';', '(', ')'];
const REDIRECTS = ['<<<', '<<-', '&>>', '<<', '<&', '<>', '>>', '>&', '>|', '&>', '<', '>'];
const WORD_END = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);
const SPECIAL = new Set([...WORD_END, '\\', "'", '"', '$', '`']);
const ASSIGNMENT = /[A-Za-z_][A-Za-z0-9_]*\+?=/y;
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const BRACE_EXPANSION = /\{[^{}]*(,|\.\.)[^{}]*\}/;

interface PendingHeredoc {
  delimiter: string;
  stripTabs: boolean;
  expand: boolean;
}

/** Turns sh source into tokens, one at a time, as the parser asks. */
export class ShellLexer {
  #pos = 0;
  readonly #pending: PendingHeredoc[] = [];

  /** Reads `source`; substitutions met inside words go to `hooks`. */
  constructor(
    readonly source: string,
    private readonly hooks: ShellLexerHooks,
  ) {}

  /** Offset of the next character to read. */
  get position(): number {
    return this.#pos;
  }

  /** Reads the next token. */
  next(): ShellToken {
    this.#skipBlanks();
    const start = this.#pos;
    const char = this.source[start];
    if (char === undefined) {
      if (this.#pending.length > 0) throw new ShellSyntaxError(`here-document ended by "${this.#pending[0]?.delimiter}" is never closed`);
      return { kind: 'eof', start, end: start };
    }
    if (char === '\n') {
      this.#pos++;
      this.#readHeredocBodies();
      return { kind: 'op', op: '\n', start, end: this.#pos };
    }
    if ((char === '<' || char === '>') && this.source[start + 1] === '(') {
      this.#pos += 2;
      this.hooks.substitution(this);
      return { kind: 'word', word: processSubstitution(this.source.slice(start, this.#pos)), start, end: this.#pos };
    }
    const redirect = REDIRECTS.find((op) => this.source.startsWith(op, start));
    if (redirect !== undefined) {
      this.#pos += redirect.length;
      return { kind: 'redirect', op: redirect, start, end: this.#pos };
    }
    const op = OPERATORS.find((candidate) => this.source.startsWith(candidate, start));
    if (op !== undefined) {
      this.#pos += op.length;
      return { kind: 'op', op, start, end: this.#pos };
    }
    const word = this.#readWord();
    const after = this.source[this.#pos];
    if (/^[0-9]+$/.test(word.raw) && (after === '<' || after === '>')) {
      const fdRedirect = REDIRECTS.find((candidate) => this.source.startsWith(candidate, this.#pos)) ?? after;
      this.#pos += fdRedirect.length;
      return { kind: 'redirect', op: fdRedirect, start, end: this.#pos };
    }
    return { kind: 'word', word, start, end: this.#pos };
  }

  /** Registers a here-document whose body starts after the next newline. */
  queueHeredoc(delimiter: ShellWord, stripTabs: boolean): void {
    this.#pending.push({ delimiter: delimiter.text, stripTabs, expand: !delimiter.quoted });
  }

  /** Reads substitutions out of text that is expanded like a double-quoted string (a here-document body). */
  scanExpansions(): void {
    const sink = emptyWord();
    while (this.#pos < this.source.length) {
      const char = this.source[this.#pos];
      if (char === '\\') this.#pos += 2;
      else if (char === '$') this.#readDollar(sink, true);
      else if (char === '`') this.#readBackticks(sink, true);
      else this.#pos++;
    }
  }

  #skipBlanks(): void {
    for (;;) {
      const char = this.source[this.#pos];
      if (char === ' ' || char === '\t' || char === '\r') this.#pos++;
      else if (char === '\\' && this.source[this.#pos + 1] === '\n') this.#pos += 2;
      else if (char === '#') {
        const newline = this.source.indexOf('\n', this.#pos);
        this.#pos = newline === -1 ? this.source.length : newline;
      } else return;
    }
  }

  #readWord(): ShellWord {
    const start = this.#pos;
    const word = emptyWord();
    let unquoted = '';
    ASSIGNMENT.lastIndex = start;
    const assignment = ASSIGNMENT.exec(this.source);
    if (assignment !== null) {
      word.assignment = true;
      word.text = assignment[0];
      this.#pos += assignment[0].length;
      if (this.source[this.#pos] === '(') this.#readArrayValue(word);
    }
    for (;;) {
      const char = this.source[this.#pos];
      if (char === undefined || WORD_END.has(char)) break;
      if (char === '\\') {
        const escaped = this.source[this.#pos + 1];
        this.#pos += escaped === undefined ? 1 : 2;
        if (escaped !== '\n') {
          word.text += escaped ?? '\\';
          word.quoted = true;
        }
      } else if (char === "'") {
        const close = this.source.indexOf("'", this.#pos + 1);
        if (close === -1) throw new ShellSyntaxError('a single quote is never closed');
        word.text += this.source.slice(this.#pos + 1, close);
        word.quoted = true;
        this.#pos = close + 1;
      } else if (char === '"') {
        this.#readDoubleQuoted(word);
      } else if (char === '$') {
        this.#readDollar(word, false);
      } else if (char === '`') {
        this.#readBackticks(word, false);
      } else {
        // Take the whole run of plain characters at once.
        const runStart = this.#pos;
        while (this.#pos < this.source.length && !SPECIAL.has(this.source[this.#pos] as string)) this.#pos++;
        const run = this.source.slice(runStart, this.#pos);
        if (/[*?[]/.test(run)) word.pattern = true;
        unquoted += run;
        word.text += run;
      }
    }
    if (BRACE_EXPANSION.test(unquoted)) word.pattern = true;
    word.raw = this.source.slice(start, this.#pos);
    return word;
  }

  // `NAME=(a b c)`: a bash array value; read to the matching paren.
  #readArrayValue(word: ShellWord): void {
    let depth = 0;
    while (this.#pos < this.source.length) {
      const char = this.source[this.#pos];
      if (char === '(') depth++;
      else if (char === ')') depth--;
      else if (char === '$') {
        this.#readDollar(word, false);
        continue;
      } else if (char === '`') {
        this.#readBackticks(word, false);
        continue;
      }
      this.#pos++;
      if (depth === 0) return;
    }
    throw new ShellSyntaxError('an array value "(" is never closed');
  }

  #readDoubleQuoted(word: ShellWord): void {
    word.quoted = true;
    this.#pos++;
    for (;;) {
      const char = this.source[this.#pos];
      if (char === undefined) throw new ShellSyntaxError('a double quote is never closed');
      if (char === '"') {
        this.#pos++;
        return;
      }
      if (char === '\\') {
        const escaped = this.source[this.#pos + 1];
        if (escaped !== undefined && '$`"\\\n'.includes(escaped)) {
          if (escaped !== '\n') word.text += escaped;
          this.#pos += 2;
        } else {
          word.text += '\\';
          this.#pos++;
        }
      } else if (char === '$') this.#readDollar(word, true);
      else if (char === '`') this.#readBackticks(word, true);
      else {
        word.text += char;
        this.#pos++;
      }
    }
  }

  #readDollar(word: ShellWord, inDoubleQuotes: boolean): void {
    const next = this.source[this.#pos + 1];
    if (next === "'" && !inDoubleQuotes) {
      this.#readAnsiC(word);
    } else if (next === '"' && !inDoubleQuotes) {
      this.#pos++;
      this.#readDoubleQuoted(word);
    } else if (next === '(' && this.source[this.#pos + 2] === '(') {
      this.#pos += 3;
      this.#readArithmetic();
      word.dynamic = true;
    } else if (next === '(') {
      this.#pos += 2;
      this.hooks.substitution(this);
      word.dynamic = true;
    } else if (next === '{') {
      this.#pos += 2;
      this.#readBracedParameter();
      word.dynamic = true;
    } else if (next !== undefined && /[A-Za-z_]/.test(next)) {
      NAME.lastIndex = this.#pos + 1;
      this.#pos += 1 + (NAME.exec(this.source)?.[0].length ?? 1);
      word.dynamic = true;
    } else if (next !== undefined && /[0-9@*#?$!-]/.test(next)) {
      this.#pos += 2;
      word.dynamic = true;
    } else {
      word.text += '$';
      this.#pos++;
    }
  }

  #readBracedParameter(): void {
    const sink = emptyWord();
    let depth = 1;
    for (;;) {
      const char = this.source[this.#pos];
      if (char === undefined) throw new ShellSyntaxError('a "${" is never closed');
      if (char === '}' && --depth === 0) {
        this.#pos++;
        return;
      }
      if (char === '{') depth++;
      if (char === '\\') this.#pos += 2;
      else if (char === '"') this.#readDoubleQuoted(sink);
      else if (char === '$') this.#readDollar(sink, true);
      else if (char === '`') this.#readBackticks(sink, true);
      else this.#pos++;
    }
  }

  #readArithmetic(): void {
    const sink = emptyWord();
    let depth = 0;
    for (;;) {
      const char = this.source[this.#pos];
      if (char === undefined) throw new ShellSyntaxError('a "$((" is never closed');
      if (char === ')' && depth === 0 && this.source[this.#pos + 1] === ')') {
        this.#pos += 2;
        return;
      }
      if (char === '(') depth++;
      if (char === ')') depth--;
      if (char === '$') this.#readDollar(sink, true);
      else if (char === '`') this.#readBackticks(sink, true);
      else this.#pos++;
    }
  }

  #readBackticks(word: ShellWord, inDoubleQuotes: boolean): void {
    const escapable = inDoubleQuotes ? '$`\\"' : '$`\\';
    let body = '';
    this.#pos++;
    for (;;) {
      const char = this.source[this.#pos];
      if (char === undefined) throw new ShellSyntaxError('a backquote is never closed');
      if (char === '`') break;
      const escaped = this.source[this.#pos + 1];
      if (char === '\\' && escaped !== undefined && escapable.includes(escaped)) {
        body += escaped;
        this.#pos += 2;
      } else {
        body += char;
        this.#pos++;
      }
    }
    this.#pos++;
    word.dynamic = true;
    this.hooks.nested(body);
  }

  #readAnsiC(word: ShellWord): void {
    word.quoted = true;
    this.#pos += 2;
    for (;;) {
      const char = this.source[this.#pos];
      if (char === undefined) throw new ShellSyntaxError("a $' quote is never closed");
      if (char === "'") {
        this.#pos++;
        return;
      }
      if (char !== '\\') {
        word.text += char;
        this.#pos++;
        continue;
      }
      const escape = /^\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)/s.exec(
        this.source.slice(this.#pos, this.#pos + 11),
      );
      const body = escape?.[1] ?? '';
      word.text += decodeAnsiEscape(body);
      this.#pos += 1 + Math.max(body.length, 1);
    }
  }

  #readHeredocBodies(): void {
    for (const heredoc of this.#pending.splice(0)) {
      let body = '';
      for (;;) {
        if (this.#pos >= this.source.length) {
          throw new ShellSyntaxError(`here-document ended by "${heredoc.delimiter}" is never closed`);
        }
        const newline = this.source.indexOf('\n', this.#pos);
        const end = newline === -1 ? this.source.length : newline;
        const line = this.source.slice(this.#pos, end);
        this.#pos = newline === -1 ? end : end + 1;
        if ((heredoc.stripTabs ? line.replace(/^\t+/, '') : line) === heredoc.delimiter) break;
        body += `${line}\n`;
      }
      if (heredoc.expand) new ShellLexer(body, this.hooks).scanExpansions();
    }
  }
}

function emptyWord(): ShellWord {
  return { text: '', raw: '', quoted: false, dynamic: false, pattern: false, assignment: false };
}

function processSubstitution(raw: string): ShellWord {
  return { text: '', raw, quoted: false, dynamic: true, pattern: false, assignment: false };
}

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v',
};

function decodeAnsiEscape(body: string): string {
  const head = body[0] ?? '';
  if (head === 'x' || head === 'u' || head === 'U') return String.fromCodePoint(Math.min(parseInt(body.slice(1), 16), 0x10ffff));
  if (/^[0-7]/.test(body)) return String.fromCharCode(parseInt(body, 8) & 0xff);
  if (head === 'c') return String.fromCharCode((body.charCodeAt(1) || 64) & 0x1f);
  return SIMPLE_ESCAPES[head] ?? head;
}
