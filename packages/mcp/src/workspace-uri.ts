/**
 * Resource URIs of the session's workspace: `airlock://workspace/{path}`,
 * the path relative to /workspace with each segment percent-encoded. Also
 * the order resources are listed in (path segments compared one by one,
 * which is the order of a depth-first walk with sorted names) and the
 * listing cursor (the last position reached, opaque to clients).
 */
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { protocolError } from './protocol-error.js';

/** The workspace directory inside the session machine. */
export const WORKSPACE_ROOT = '/workspace';
/** The resource template of workspace files (RFC 6570). */
export const WORKSPACE_URI_TEMPLATE = 'airlock://workspace/{path}';
const PREFIX = 'airlock://workspace/';

/** The URI of a file given as path segments under /workspace. */
export function uriOfSegments(segments: readonly string[]): string {
  return PREFIX + segments.map(encodeURIComponent).join('/');
}

/** The path segments under /workspace that a URI names; throws -32602 for anything else. */
export function segmentsOfUri(uri: string): string[] {
  if (typeof uri !== 'string' || !uri.startsWith(PREFIX)) {
    throw protocolError(ErrorCode.InvalidParams, `resource URIs of this server look like ${WORKSPACE_URI_TEMPLATE}, e.g. ${PREFIX}src/main.py; got ${JSON.stringify(uri)}`, { field: 'uri', uri });
  }
  const rest = uri.slice(PREFIX.length).replace(/[?#].*$/s, '');
  let segments: string[];
  try {
    segments = rest.split('/').map((segment) => decodeURIComponent(segment));
  } catch {
    throw protocolError(ErrorCode.InvalidParams, `${JSON.stringify(uri)} has a malformed percent-encoding`, { field: 'uri', uri });
  }
  if (rest === '' || segments.some((segment) => segment === '' || segment === '.' || segment === '..' || segment.includes('/') || segment.includes('\0'))) {
    throw protocolError(ErrorCode.InvalidParams, `${JSON.stringify(uri)} does not name a file under ${WORKSPACE_ROOT} (no empty, "." or ".." segments)`, { field: 'uri', uri });
  }
  return segments;
}

/** The absolute path in the machine of segments under /workspace. */
export function pathOfSegments(segments: readonly string[]): string {
  return segments.length === 0 ? WORKSPACE_ROOT : `${WORKSPACE_ROOT}/${segments.join('/')}`;
}

/** Order of paths in a depth-first walk with names sorted by code unit: a directory comes before what it holds. */
export function compareSegments(a: readonly string[], b: readonly string[]): number {
  const shared = Math.min(a.length, b.length);
  for (let index = 0; index < shared; index += 1) {
    const left = a[index] as string;
    const right = b[index] as string;
    if (left !== right) return left < right ? -1 : 1;
  }
  return a.length - b.length;
}

/** True when `ancestor` is a directory that holds `path` (not the path itself). */
export function holds(ancestor: readonly string[], path: readonly string[]): boolean {
  return ancestor.length < path.length && ancestor.every((segment, index) => segment === path[index]);
}

/** The cursor of a listing position. */
export function encodeCursor(position: readonly string[]): string {
  return Buffer.from(JSON.stringify(position), 'utf8').toString('base64url');
}

/** The position a cursor names; throws -32602 for a cursor this server did not make. */
export function decodeCursor(cursor: string): string[] {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(value) && value.every((segment) => typeof segment === 'string')) return value as string[];
  } catch {
    // reported below
  }
  throw protocolError(ErrorCode.InvalidParams, 'this cursor was not made by this server; pass the nextCursor of the previous resources/list page, or none for the first page', { field: 'cursor' });
}

const MIME_TYPES: Record<string, string> = {
  txt: 'text/plain',
  log: 'text/plain',
  md: 'text/markdown',
  json: 'application/json',
  js: 'text/javascript',
  mjs: 'text/javascript',
  ts: 'text/x-typescript',
  py: 'text/x-python',
  sh: 'text/x-shellscript',
  html: 'text/html',
  css: 'text/css',
  csv: 'text/csv',
  xml: 'application/xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  toml: 'application/toml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  svg: 'image/svg+xml',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tar: 'application/x-tar',
};

/** The MIME type a file name suggests, if its extension is a common one. */
export function mimeTypeOf(name: string): string | undefined {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? MIME_TYPES[name.slice(dot + 1).toLowerCase()] : undefined;
}
