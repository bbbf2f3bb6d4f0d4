/**
 * Commands for the shell analysis tests: the eight of issue 22, which
 * deleted a file while the analysis called them analysable without listing
 * rm, and a generator of random commands for the differential test.
 */

/** The eight commands of issue 22 (F is the file they delete). */
export const ISSUE_22_COMMANDS: readonly string[] = [
  'echo x \r#; rm -f F',
  "echo $'\\' ; rm -f F\necho '",
  '[[ x; rm -f F; ]]',
  '((rm -f F) )',
  'echo ${x:-{}; rm -f F\n}',
  'bash -c "coproc NAME { rm -f F; }"',
  'echo F | xargs --replace rm -f {}',
  "env -S 'rm\\_-f\\_F'",
];

/** Programs the generated commands name; the differential test gives each a stub. */
export const CORPUS_PROGRAMS: readonly string[] = ['rm', 'ls', 'cat', 'grep', 'id', 'tee', 'a', 'b', 'F', 'x'];

/** A deterministic random source (a linear congruential generator), so a failure can be replayed. */
export class CorpusRandom {
  #seed: number;

  constructor(seed: number) {
    this.#seed = seed;
  }

  /** A number in [0, 1). */
  next(): number {
    this.#seed = (this.#seed * 1103515245 + 12345) % 2 ** 31;
    return this.#seed / 2 ** 31;
  }

  /** An integer in [0, bound). */
  below(bound: number): number {
    return Math.floor(this.next() * bound);
  }

  /** One of `items`. */
  pick<T>(items: readonly T[]): T {
    return items[this.below(items.length)] as T;
  }
}

const ARGUMENTS = [
  'F',
  '-f',
  'x',
  '"a b"',
  "'c d'",
  '$x',
  '"$x"',
  '${x:-rm}',
  '${#x}',
  '${x%%.*}',
  '$(rm F)',
  '`rm F`',
  '"$(rm F)"',
  '*',
  'a#b',
  '\\;',
  '$((1+2))',
  'A=1',
  '{}',
  '"\\""',
  '#c',
  '${x:-"$(rm F)"}',
  "'#'",
  'r\\m',
];
/** Arguments that dash reads otherwise than bash, or that a reader may get wrong. */
const TRICKY_ARGUMENTS = [
  '${x:-{}',
  '"${x:-\'rm\'}"',
  '{a,b}',
  "$'\\x72m'",
  '$"rm"',
  '-S',
  '--replace',
  '\\',
  '${x/a/b}',
  '$((x))',
  '\\\nrm',
  ')',
  '(',
  '}',
  '{',
  'esac',
  'fi',
  'done',
  ';;',
  '$(( $(rm F) ))',
  "${x#'}'}",
  '"`rm F`"',
  '$(case x in x) rm F;; esac)',
];
const REDIRECTIONS = [
  '',
  '',
  '',
  '',
  '',
  '',
  '',
  '',
  '',
  '',
  ' >/dev/null',
  ' >/dev/null',
  ' 2>&1',
  ' <F',
  ' &>/dev/null',
  ' <<< x',
  ' 2>/dev/null',
  ' >|/dev/null',
];
const OPERATORS = [' ; ', ' && ', ' || ', ' | ', ' & ', '\n', ';', '|', '&&'];
const SOUP = [
  'a',
  'rm',
  ' ',
  ';',
  '&',
  '|',
  '(',
  ')',
  '{',
  '}',
  '$',
  '`',
  '"',
  "'",
  '\\',
  '<',
  '>',
  '\n',
  '#',
  '=',
  'if',
  'then',
  'fi',
  'case',
  'in',
  'esac',
  ';;',
  '$(',
  '<<',
  'E',
  '*',
  '-c',
  'sh',
  '\r',
  "$'",
  '[[',
  ']]',
  '((',
  'coproc',
  'F',
];
const CONTROL = ['\r', '\x0b', '\x01', '\x1b', '\x7f'];

/** Random commands built from words, quotes, pipes, lists, subshells, substitutions, redirections, here-documents, wrappers and control characters. */
export function generateCommands(count: number, seed: number): string[] {
  const random = new CorpusRandom(seed);
  const quote = (text: string): string => `'${text.replaceAll("'", "'\\''")}'`;
  const name = (): string => {
    const program = random.pick(CORPUS_PROGRAMS);
    return random.pick([
      program,
      program,
      program,
      `"${program}"`,
      `'${program}'`,
      `\\${program}`,
      `${program.slice(0, 1)}"${program.slice(1)}"`,
      `A=1 ${program}`,
    ]);
  };
  const simple = (): string => {
    let words = name();
    for (let index = random.below(4); index > 0; index--) words += ` ${random.pick(random.below(6) === 0 ? TRICKY_ARGUMENTS : ARGUMENTS)}`;
    return words + random.pick(REDIRECTIONS);
  };
  const command = (depth: number): string => {
    if (depth > 3) return simple();
    const inner = (): string => list(depth + 1);
    switch (random.below(40)) {
      case 0:
        return `( ${inner()} )`;
      case 1:
        return `{ ${inner()}; }`;
      case 2:
        return `if ${inner()}; then ${inner()}; else ${inner()}; fi`;
      case 3:
        return `case x in x) ${inner()};; esac`;
      case 4:
        return `for i in a b; do ${inner()}; done`;
      case 5:
        return `echo $(${inner()})`;
      case 6:
        return `cat <<E\n$(${inner()})\nE\n`;
      case 7:
        return `cat <<'E'\n${inner()}\nE\n`;
      case 8:
        return `f() { ${inner()}; }; f`;
      case 9:
        return `sh -c ${quote(inner())}`;
      case 10:
        return `bash -c ${quote(inner())}`;
      case 11:
        return `env A=1 ${simple()}`;
      case 12:
        return `env ${random.pick(['-S', '-i', '-u x', '--split-string=', '-', '-0'])} ${quote(simple())}`;
      case 13:
        return `echo F | xargs ${random.pick(['', '-0', '-n 1', '-I {}', '--replace', '-i', '-r', '--max-args=1', '-e'])} ${simple()}`;
      case 14:
        return `nice -n 1 ${simple()}`;
      case 15:
        return `timeout ${random.pick(['5', '-s KILL 5', '--foreground 5', '-v 5'])} ${simple()}`;
      case 16:
        return `find . -maxdepth 0 -exec ${name()} {} \\;`;
      case 17:
        return `[[ x; ${inner()}; ]]`;
      case 18:
        return `((${inner()}) )`;
      case 19:
        return `! ${inner()}`;
      case 20:
        return `echo \`${simple().replaceAll('`', '')}\``;
      case 21:
        return `echo "${simple().replaceAll('"', '')}" ${quote(simple())}`;
      default:
        return simple();
    }
  };
  const list = (depth: number): string => {
    let text = command(depth);
    for (let index = random.below(3); index > 0; index--) text += random.pick(OPERATORS) + command(depth);
    return text;
  };
  const commands: string[] = [];
  for (let round = 0; round < count; round++) {
    let text: string;
    if (random.below(10) === 0) {
      text = '';
      for (let index = random.below(25); index > 0; index--) text += random.pick(SOUP);
    } else text = list(0);
    if (random.below(12) === 0) {
      const at = random.below(text.length + 1);
      text = text.slice(0, at) + random.pick(CONTROL) + text.slice(at);
    }
    commands.push(text);
  }
  return commands;
}

/** Commands written by hand where dash is easy to misread: continuations, here-documents, case, nested quoting, wrapper options. */
export const TRICKY_COMMANDS: readonly string[] = [
  'r\\\nm F',
  'a &\\\n& rm F',
  'echo $\\\n(rm F)',
  'cat <\\\n<E\nrm F\nE\n',
  'i\\\nf rm F; then ls; fi',
  "echo ${x#'}'}; rm F",
  'echo ${x:-\\}}; rm F',
  'echo "${x:-}" "${x:-\\}}"; rm F',
  'case x in (x) rm F;; esac',
  'case x\nin x) rm F;; esac',
  'case rm in "esac") ls;; *) rm F;; esac',
  'for i\nin a; do rm F; done',
  'for in in in; do rm F; done',
  'cat <<E; rm F\nbody\nE\n',
  'cat <<E; echo $(\nrm F\n)\nE\nls\n',
  'cat <<\\E\n$(rm F)\nE\n',
  'cat <<"E"\n`rm F`\nE\n',
  'cat <<-E\n\t$(rm F)\n\tE\n',
  'cat <<E <<F\n$(ls)\nE\n$(rm F)\nF\n',
  'echo `echo \\`rm F\\``',
  'echo "`echo \\"x\\"; rm F`"',
  'echo $(echo ")"; rm F)',
  "echo $(echo ')'; rm F)",
  'echo $(case x in x) rm F;; esac)',
  'echo $( (rm F) )',
  'echo $((1+(2))); rm F',
  'f() { rm F; }; f',
  'echo ${x:-$(echo })}; rm F',
  'echo ${x:-"}"}; rm F',
  'echo ${x:-`rm F`} "${x:-`rm F`}"',
  'echo $(cat <<E\n)\nE\n); rm F',
  'case x in $(rm F)) ;; esac',
  'for x in $(rm F); do :; done',
  'echo {; rm F; }',
  'echo "$\'"; rm F',
  'echo "$"; rm F',
  'echo $#; rm F',
  'f() ( rm F ); f',
  '{ rm F; }',
  '{rm,F}',
  '! rm F',
  'x=1 rm F',
  '>F rm F',
  '2>/dev/null rm F',
  'echo a; #; rm F\nls',
  'echo a#; rm F',
  "echo 'a\\'; rm F",
  'echo "a\\"; rm F"',
  'exec rm F',
  'exec -- rm F',
  'command rm F',
  'command -p rm F',
  'command -v rm',
  'env rm F',
  'env - rm F',
  'env -i A=1 rm F',
  'env -u A rm F',
  'env -- rm F',
  'env -0 rm F',
  'env --unset=A rm F',
  'nice rm F',
  'nice -n 5 rm F',
  'nice -5 rm F',
  'nice --adjustment=5 rm F',
  'timeout 5 rm F',
  'timeout -k 1 5 rm F',
  'timeout --kill-after=1 5 rm F',
  'timeout -s9 5 rm F',
  'nohup rm F',
  'setsid rm F',
  'setsid -f rm F',
  'stdbuf -oL rm F',
  'xargs rm',
  'echo F | xargs rm',
  'echo F | xargs -n1 rm',
  'echo F | xargs -0 rm',
  'echo F | xargs -I{} rm {}',
  'echo F | xargs -i rm {}',
  'echo F | xargs -irm rm',
  'echo F | xargs -e rm',
  'echo F | xargs -eEOF rm',
  'echo F | xargs --eof rm',
  'echo F | xargs -l rm',
  'echo F | xargs --max-lines rm',
  'echo rm | xargs',
  'echo rm | xargs env',
  'echo F | xargs sh -c \'rm "$@"\' _',
  'find . -name F -exec rm {} \\;',
  'find . -name F -exec rm {} +',
  'find . -name F -execdir rm {} \\;',
  'find . -name F -ok rm {} \\;',
  'sh -c "rm F"',
  'sh -ec "rm F"',
  'sh -c -e "rm F"',
  'sh -c -- "rm F"',
  'sh -o errexit -c "rm F"',
  'bash -c "rm F"',
  'bash --norc -c "rm F"',
  'dash -c "rm F"',
  'sh -c "sh -c \\"rm F\\""',
  "sh -c 'echo $0' rm",
  'trap "rm F" EXIT',
  'trap -- "rm F" EXIT',
  'eval rm F',
  'set -- rm F; "$@"',
  'x=rm; $x F',
  'A=1 "r"m F',
  'echo F | while read x; do rm "$x"; done',
  'if rm F; then :; fi',
  'until ! rm F; do :; done',
  'rm F &',
  'rm F | ls',
  '( rm F )',
  'bash -c "printf -v x %s 1; rm F"',
  String.raw`bash -c "y='a['; z='\$(rm F)]'; test -v \"\$y\$z\""`,
  String.raw`bash -c "y='a['; z='\$(rm F)]'; unset \"\$y\$z\""`,
  "bash -c 'unset a[$(rm F)]'",
  "bash -c 'x=1; echo $((x))'",
  "bash -c 'local -i x=1'",
];
