/**
 * Decoding contract text (JSON or YAML) into a value, with syntax errors
 * reported as INVALID_CONTRACT issues that carry the line and column.
 */
import { parseDocument } from 'yaml';
import { invalidContract } from './contract-issues.js';

/** Largest contract text accepted, in characters. */
export const MAX_CONTRACT_CHARS = 1024 * 1024;

/** Decodes contract text; `auto` reads JSON when the text starts with `{`, YAML otherwise. */
export function decodeContractText(text: string, format: 'json' | 'yaml' | 'auto'): unknown {
  if (text.length > MAX_CONTRACT_CHARS) {
    throw invalidContract([{ path: '', message: `contract text is longer than ${MAX_CONTRACT_CHARS} characters` }]);
  }
  const json = format === 'json' || (format === 'auto' && text.trimStart().startsWith('{'));
  return json ? decodeJson(text) : decodeYaml(text);
}

function decodeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw invalidContract([{ path: '', message: `JSON syntax error: ${(error as Error).message}` }]);
  }
}

function decodeYaml(text: string): unknown {
  // uniqueKeys (the default) makes a repeated key an error instead of last-one-wins.
  const document = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (document.errors.length > 0) {
    // With prettyErrors the first line of a message ends with "at line L, column C:".
    const messages = document.errors.map((error) => (error.message.split('\n')[0] ?? '').replace(/:$/, ''));
    throw invalidContract(messages.map((message) => ({ path: '', message: `YAML syntax error: ${message}` })));
  }
  return document.toJS({ maxAliasCount: 100 }) as unknown;
}
