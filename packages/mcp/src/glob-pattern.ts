/**
 * Glob matching for the `glob` tool. The search runs as `find` in the session
 * (so it passes the airlock like any command); `find -path` cannot express
 * `**` or `{a,b}`, so find gets a wider pattern and the exact match runs here.
 */

/** Compiles a glob (`*`, `?`, `[...]`, `{a,b}`, `**` across directories) to a RegExp over a relative path. */
export function globToRegExp(pattern: string): RegExp {
  let source = '';
  let braceDepth = 0;
  for (let index = 0; index < pattern.length; index += 1) {
    const char = pattern[index] as string;
    if (char === '*') {
      if (pattern[index + 1] === '*') {
        const atSegmentStart = index === 0 || pattern[index - 1] === '/';
        index += 1;
        if (atSegmentStart && pattern[index + 1] === '/') {
          index += 1;
          source += '(?:.*/)?';
        } else {
          source += '.*';
        }
      } else {
        source += '[^/]*';
      }
    } else if (char === '?') {
      source += '[^/]';
    } else if (char === '[') {
      const close = pattern.indexOf(']', index + 2);
      if (close < 0) {
        source += '\\[';
        continue;
      }
      let body = pattern.slice(index + 1, close);
      const negated = body.startsWith('!') || body.startsWith('^');
      if (negated) body = body.slice(1);
      source += `[${negated ? '^' : ''}${body.replace(/[\\\]]/g, '\\$&')}]`;
      index = close;
    } else if (char === '{') {
      braceDepth += 1;
      source += '(?:';
    } else if (char === '}' && braceDepth > 0) {
      braceDepth -= 1;
      source += ')';
    } else if (char === ',' && braceDepth > 0) {
      source += '|';
    } else if (char === '\\' && index + 1 < pattern.length) {
      index += 1;
      source += escapeRegExp(pattern[index] as string);
    } else {
      source += escapeRegExp(char);
    }
  }
  if (braceDepth > 0) throw new Error(`unbalanced { in glob ${JSON.stringify(pattern)}`);
  return new RegExp(`^${source}$`);
}

/** A `find -path` pattern matching at least every path the glob matches under `root` (find's `*` also crosses `/`). */
export function findPathPattern(root: string, pattern: string): string {
  const wide = pattern
    .replace(/\{[^{}]*\}/g, '*')
    .replace(/[{}]/g, '*')
    .replace(/\*\*\/?/g, '*')
    .replace(/\*+/g, '*');
  return `${escapeFnmatch(root.replace(/\/+$/, '') || '/')}/${wide}`.replace(/^\/\//, '/');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function escapeFnmatch(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
