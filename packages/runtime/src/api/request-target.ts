/**
 * The request target, checked before anything else reads it. The router
 * matches a decoded, host-stripped path while a raw target can say
 * something else (`/%761/...` is `/v1/...`, `http://host/v1/...` too); so
 * only targets whose path reads the same raw and decoded are accepted:
 * origin form, no percent-encoding of a character that needs none or of a
 * separator, no dot segments, no empty segments, no backslash, no control
 * character. What the router then matches is exactly what the target says.
 */
import { AirlockError } from '../core/errors.js';

/**
 * Characters a path may carry as they are: RFC 3986 pchar and `/`, plus the
 * few a browser leaves unencoded (`[]^|`); `%` only as the start of an encoding.
 */
const PATH_CHARACTERS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/%[\]^|]*$/;
/** A query may carry anything printable in ASCII: it is never routed on. */
const QUERY_CHARACTERS = /^[\x21-\x7e]*$/;
/** Bytes that must be sent as they are, never encoded: unreserved characters, and `/` and `\`, which separate segments. */
const MUST_NOT_BE_ENCODED = /[A-Za-z0-9\-._~/\\]/;

const REMEDY =
  'send the path in origin form (starting with /) exactly as the API documents it, without percent-encoding of letters, digits, `-._~` or `/`, and without `.`, `..` or empty segments';

function refused(target: string, problem: string): AirlockError {
  return new AirlockError('INVALID_REQUEST', `the request target ${JSON.stringify(target.slice(0, 200))} ${problem}: ${REMEDY}`, {
    details: { field: 'target' },
  });
}

/** Why the path of a request target is refused, or undefined when it reads the same raw and decoded. */
function pathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'is not in origin form (an absolute URL, or `*`)';
  if (!PATH_CHARACTERS.test(path)) return 'holds a character a path may not carry (a backslash, a space, a control or non-ASCII character)';
  for (let at = path.indexOf('%'); at >= 0; at = path.indexOf('%', at + 1)) {
    const hex = path.slice(at + 1, at + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return 'holds a `%` that starts no encoding';
    const byte = Number.parseInt(hex, 16);
    if (byte < 0x20 || byte === 0x7f) return `encodes a control character (%${hex})`;
    if (MUST_NOT_BE_ENCODED.test(String.fromCharCode(byte)))
      return `encodes ${JSON.stringify(String.fromCharCode(byte))} (%${hex}), which must be sent as it is`;
  }
  if (path.includes('//')) return 'has an empty segment (`//`)';
  if (path.split('/').some((segment) => segment === '.' || segment === '..')) return 'has a `.` or `..` segment';
  return undefined;
}

/** The names of a query string given more than once (decoded as the query parser decodes them). */
export function repeatedQueryNames(query: string): string[] {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const name of new URLSearchParams(query).keys()) {
    if (seen.has(name)) repeated.add(name);
    seen.add(name);
  }
  return [...repeated];
}

/**
 * Refuses (400 INVALID_REQUEST) a request target whose path does not read
 * the same raw and decoded; with `refuseRepeated`, refuses (400
 * INVALID_ARGUMENTS) a query naming a parameter twice.
 */
export function checkRequestTarget(target: string, options: { refuseRepeated: boolean }): void {
  const mark = target.indexOf('?');
  const path = mark < 0 ? target : target.slice(0, mark);
  const problem = pathProblem(path);
  if (problem) throw refused(target, problem);
  if (mark < 0) return;
  const query = target.slice(mark + 1);
  if (!QUERY_CHARACTERS.test(query)) throw refused(target, 'has a query with a space, a control or a non-ASCII character');
  if (!options.refuseRepeated) return;
  const repeated = repeatedQueryNames(query);
  if (repeated.length > 0) {
    throw new AirlockError(
      'INVALID_ARGUMENTS',
      `the query parameter ${repeated.map((name) => JSON.stringify(name)).join(', ')} is given more than once; give each parameter once`,
      { details: { field: repeated[0] ?? '' } },
    );
  }
}
