/**
 * A bound on how complex one Cedar policy may be, checked before Cedar sees
 * it. Cedar's parser and evaluator recurse once per operator of a condition:
 * a chain of ~1,000 `&&` terms overflows the WebAssembly stack (measured with
 * cedar-wasm 4.13.0), which would surface as a server fault instead of a
 * policy error. Real policies stay far below these limits; long allowlists
 * belong in a set literal (`["a", "b"].contains(x)`), which costs one operator.
 */

/** Most binary and membership operators one policy may hold. */
export const MAX_POLICY_OPERATORS = 256;
/** Deepest nesting of parentheses, brackets and braces in one policy. */
export const MAX_POLICY_NESTING = 32;

const OPERATORS = ['&&', '||', '==', '!=', '<=', '>=', '<', '>', '+', '-', '*'];
const KEYWORD_OPERATORS = new Set(['in', 'like', 'has', 'is', 'if']);

/** Why a policy text (one or more policies) is too complex for Cedar, or undefined when each is within the limits. */
export function policyComplexityProblem(text: string): string | undefined {
  // Counted per policy: a `;` outside any bracket ends one.
  let operators = 0;
  let mostOperators = 0;
  let depth = 0;
  let deepest = 0;
  for (let index = 0; index < text.length; ) {
    const char = text[index] ?? '';
    if (char === '"') {
      index = skipString(text, index);
      continue;
    }
    if (char === '/' && text[index + 1] === '/') {
      const end = text.indexOf('\n', index);
      index = end === -1 ? text.length : end + 1;
      continue;
    }
    if (char === '(' || char === '[' || char === '{') {
      depth += 1;
      deepest = Math.max(deepest, depth);
    } else if (char === ')' || char === ']' || char === '}') {
      depth = Math.max(0, depth - 1);
    } else if (char === ';' && depth === 0) {
      operators = 0;
    }
    if (/[A-Za-z_]/.test(char)) {
      const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(index, index + 64))?.[0] ?? char;
      if (KEYWORD_OPERATORS.has(word)) mostOperators = Math.max(mostOperators, ++operators);
      index += word.length;
      continue;
    }
    const operator = OPERATORS.find((candidate) => text.startsWith(candidate, index));
    if (operator) {
      mostOperators = Math.max(mostOperators, ++operators);
      index += operator.length;
      continue;
    }
    index += 1;
  }
  if (mostOperators > MAX_POLICY_OPERATORS) {
    return `a policy has ${mostOperators} operators, above the limit of ${MAX_POLICY_OPERATORS}; split it into several policies, or put long lists in a set literal (["a", "b"].contains(x))`;
  }
  if (deepest > MAX_POLICY_NESTING) {
    return `policy nests parentheses, brackets or braces ${deepest} deep, above the limit of ${MAX_POLICY_NESTING}; flatten the condition`;
  }
  return undefined;
}

/** Index just past the string literal that starts at `start` (a `"`), honouring backslash escapes. */
function skipString(text: string, start: number): number {
  for (let index = start + 1; index < text.length; index++) {
    if (text[index] === '\\') index += 1;
    else if (text[index] === '"') return index + 1;
  }
  return text.length;
}
