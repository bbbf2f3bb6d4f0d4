/**
 * Tokenizer for the shell language as dash (Debian's `/bin/sh`) reads it.
 * Quote removal happens here, so `"r""m"` is the word `rm`. Command
 * substitutions are handed to hooks as they are met, so a program inside
 * `$(…)`, backticks or a here-document body is never missed. It is strict:
 * anything dash would read differently from bash, or that it cannot model
 * exactly (control characters, `$'…'`, `<(…)`, `&>`, `|&`, `<<<`, arrays,
 * `${…}` forms beyond POSIX), throws ShellUnmodelledError (ADR 0022).
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

/** A construct that is valid somewhere but not read exactly here: bash-only syntax, control characters. */
export class ShellUnmodelledError extends ShellSyntaxError {
  override name = 'ShellUnmodelledError';
}

/** Characters below space other than tab and newline, and DEL: dash reads them as word characters, readers of the command may not. */
const CONTROL_CHARACTER = /[\x00-\x08\x0b-\x1f\x7f]/;
/** Operators bash reads but dash reads as something else (or refuses). */
const BASH_OPERATORS = ['<<<', '&>>', '&>', '|&', ';;&', ';&', '<(', '>('];

const OPERATORS = ['&&', '||', ';;', '|', '&', ';', '(', ')'];
const REDIRECTS = ['<<-', '<<', '<&', '<>', '>>', '>&', '>|', '<', '>'];
const WORD_END = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);
const SPECIAL = new Set([...WORD_END, '\\', "'", '"', '$', '`']);
const ASSIGNMENT = /[A-Za-z_][A-Za-z0-9_]*=/y;
const PARAMETER = /[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*?$!]/y;
const PARAMETER_OPERATOR = /:?[-=?+]|%%?|##?/y;
const ARITHMETIC = /[A-Za-z0-9_ \t\n+\-*/%<>=!&|^~?:,]/;
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const BRACE_EXPANSION = /\{[^{}]*(,|\.\.)[^{}]*\}/;

interface PendingHeredoc {
  delimiter: string;
  stripTabs: boolean;
  expand: boolean;
}

/**
 * Which shell runs the source: dash (`/bin/sh`, `sh -c`), or bash (`bash -c`),
 * read through the same strict subset plus the few refusals bash needs.
 */
export type ShellDialect = 'dash' | 'bash';

/** Turns sh source into tokens, one at a time, as the parser asks. */
export class ShellLexer {
  #pos = 0;
  readonly #pending: PendingHeredoc[] = [];

  /** Reads `source`; substitutions met inside words go to `hooks`. */
  constructor(
    readonly source: string,
    private readonly hooks: ShellLexerHooks,
    readonly dialect: ShellDialect = 'dash',
  ) {
    const control = CONTROL_CHARACTER.exec(source);
    if (control !== null) {
      const code = control[0].charCodeAt(0).toString(16).padStart(4, '0').toUpperCase();
      throw new ShellUnmodelledError(`the control character U+${code} is not read the same by every reader of the command`);
    }
  }

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
    const bash = BASH_OPERATORS.find((op) => this.source.startsWith(op, start));
    if (bash !== undefined) throw new ShellUnmodelledError(`"${bash}" is bash syntax; /bin/sh (dash) reads it otherwise`);
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
      const bashRedirect = BASH_OPERATORS.find((candidate) => this.source.startsWith(candidate, this.#pos));
      if (bashRedirect !== undefined) throw new ShellUnmodelledError(`"${bashRedirect}" is bash syntax; /bin/sh (dash) reads it otherwise`);
      const fdRedirect = REDIRECTS.find((candidate) => this.source.startsWith(candidate, this.#pos)) ?? after;
      this.#pos += fdRedirect.length;
      return { kind: 'redirect', op: fdRedirect, start, end: this.#pos };
    }
    return { kind: 'word', word, start, end: this.#pos };
  }

  /** Registers a here-document whose body starts after the next newline. */
  queueHeredoc(delimiter: ShellWord, stripTabs: boolean): void {
    if (delimiter.dynamic) throw new ShellUnmodelledError(`the here-document delimiter ${JSON.stringify(delimiter.raw)} contains an expansion`);
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
      if (char === ' ' || char === '\t') this.#pos++;
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
      if (this.source[this.#pos] === '(') throw new ShellUnmodelledError('an array value "NAME=(…)" is bash syntax; /bin/sh (dash) refuses it');
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
    // bash evaluates an array subscript in a name given as data (`printf -v`, `test -v`, `unset`), substitutions included.
    if (this.dialect === 'bash' && (/\[[^\]]*[$`]/.test(word.text) || /\[[^\]]*[$`]/.test(word.raw))) {
      throw new ShellUnmodelledError(`bash may evaluate ${JSON.stringify(word.raw)} as an array subscript`);
    }
    return word;
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
    if ((next === "'" || next === '"') && !inDoubleQuotes) {
      throw new ShellUnmodelledError(`"$${next}" quoting is bash syntax; /bin/sh (dash) reads it as "$" and a quote`);
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
      this.#readBracedParameter(inDoubleQuotes);
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

  // `${…}` as dash reads it: a parameter, then `}` or one POSIX operator and
  // a word up to the first unquoted `}` (dash does not count braces).
  #readBracedParameter(inDoubleQuotes: boolean): void {
    const sink = emptyWord();
    const unmodelled = (what: string): ShellUnmodelledError => new ShellUnmodelledError(`${what} in "\${…}" is not read exactly as /bin/sh (dash) reads it`);
    if (this.source[this.#pos] === '#' && this.source[this.#pos + 1] === '}') {
      this.#pos += 2;
      return;
    }
    const length = this.source[this.#pos] === '#';
    if (length) this.#pos++;
    PARAMETER.lastIndex = this.#pos;
    const name = PARAMETER.exec(this.source);
    if (name === null) {
      if (this.#pos >= this.source.length) throw new ShellSyntaxError('a "${" is never closed');
      throw unmodelled(`the parameter name ${JSON.stringify(this.source.slice(this.#pos, this.#pos + 10))}`);
    }
    this.#pos += name[0].length;
    if (this.source[this.#pos] === '}') {
      this.#pos++;
      return;
    }
    if (this.#pos >= this.source.length) throw new ShellSyntaxError('a "${" is never closed');
    PARAMETER_OPERATOR.lastIndex = this.#pos;
    const operator = length ? null : PARAMETER_OPERATOR.exec(this.source);
    if (operator === null) throw unmodelled(`the operator ${JSON.stringify(this.source.slice(this.#pos, this.#pos + 10))}`);
    this.#pos += operator[0].length;
    for (;;) {
      const char = this.source[this.#pos];
      if (char === undefined) throw new ShellSyntaxError('a "${" is never closed');
      if (char === '}') {
        this.#pos++;
        return;
      }
      if (char === '{') throw unmodelled('a "{"');
      if (char === '\\') {
        if (this.source[this.#pos + 1] === undefined) throw new ShellSyntaxError('a "${" is never closed');
        this.#pos += 2;
      } else if (char === "'" || char === '"') {
        if (inDoubleQuotes) throw unmodelled('a quote inside double quotes');
        if (char === '"') this.#readDoubleQuoted(sink);
        else {
          const close = this.source.indexOf("'", this.#pos + 1);
          if (close === -1) throw new ShellSyntaxError('a single quote is never closed');
          this.#pos = close + 1;
        }
      } else if (char === '$') this.#readDollar(sink, inDoubleQuotes);
      else if (char === '`') this.#readBackticks(sink, inDoubleQuotes);
      else this.#pos++;
    }
  }

  // `$((…))`: only the characters of arithmetic and `$` expansions; quotes,
  // backslashes and backquotes are refused rather than guessed at.
  #readArithmetic(): void {
    const sink = emptyWord();
    let depth = 0;
    for (;;) {
      const char = this.source[this.#pos];
      if (char === undefined) throw new ShellSyntaxError('a "$((" is never closed');
      if (char === ')' && depth === 0) {
        if (this.source[this.#pos + 1] !== ')') throw new ShellUnmodelledError('a "$((" closed by a single ")" is not read exactly as /bin/sh (dash) reads it');
        this.#pos += 2;
        return;
      }
      if (char === '(') depth++;
      else if (char === ')') depth--;
      else if (char === '$' && this.dialect === 'dash') {
        this.#readDollar(sink, true);
        continue;
      } else if (this.dialect === 'bash' && /[A-Za-z_$]/.test(char)) {
        throw new ShellUnmodelledError('bash evaluates the value of a variable in "$((…))" as an expression, substitutions included');
      } else if (!ARITHMETIC.test(char)) throw new ShellUnmodelledError(`${JSON.stringify(char)} inside "$((…))" is not read exactly as /bin/sh (dash) reads it`);
      this.#pos++;
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
    if (this.#pending.length > 0 && body.includes('\n')) throw new ShellUnmodelledError('a backquoted command spanning lines before a pending here-document');
    this.hooks.nested(body);
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
      // dash joins a backslash-newline of an expanded body before it looks for the delimiter.
      if (heredoc.expand && body.includes('\\\n')) throw new ShellUnmodelledError('a backslash-newline in a here-document body is not read exactly as /bin/sh (dash) reads it');
      if (heredoc.expand) new ShellLexer(body, this.hooks, this.dialect).scanExpansions();
    }
  }
}

function emptyWord(): ShellWord {
  return { text: '', raw: '', quoted: false, dynamic: false, pattern: false, assignment: false };
}
