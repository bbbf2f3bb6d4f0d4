/**
 * The plain-TS filesystem check that runs before Cedar: prefix lists from the
 * contract against a canonical path. Sub-microsecond, and it does not depend on
 * anyone writing a correct `like` pattern (which `..` defeats).
 */
import { posix } from 'node:path';
import type { FileToolName } from '../core/tool-call.js';
import type { FilesystemRules } from '../core/session-contract.js';

/** Reading (read, list, stat) or changing (write, edit, remove, mkdir) a path. */
export type FileAccess = 'read' | 'write';

/** The filesystem lists of a contract (the type lives in the core). */
export type { FilesystemRules } from '../core/session-contract.js';

/** The contract list a filesystem decision came from. */
export type FilesystemRuleList = 'denyRead' | 'denyWrite' | 'readOnly' | 'allowWrite' | 'path';

/** Outcome of a filesystem check, with a sentence the agent can act on. */
export interface FilesystemDecision {
  decision: 'allow' | 'deny';
  reason: string;
  /** the rule that denied, if any */
  rule?: { list: FilesystemRuleList; prefix: string };
}

/** Options of one check. */
export interface FilesystemCheckOptions {
  /** the call acts on everything under `path` too (recursive remove, archive): deny if a protected prefix lies inside it */
  subtree?: boolean;
}

/** Which access each file tool needs; files.edit reads and writes. */
export const FILE_TOOL_ACCESS: Readonly<Record<FileToolName, readonly FileAccess[]>> = {
  'files.read': ['read'],
  'files.write': ['write'],
  'files.edit': ['read', 'write'],
  'files.list': ['read'],
  'files.remove': ['write'],
  'files.stat': ['read'],
  'files.mkdir': ['write'],
};

/** Normalizes an absolute path with posix rules and no trailing slash; undefined when relative or invalid. */
export function normalizeAbsolutePath(path: string): string | undefined {
  if (!path.startsWith('/') || path.includes('\0')) return undefined;
  const normalized = posix.normalize(path);
  return normalized.length > 1 && normalized.endsWith('/') ? normalized.slice(0, -1) : normalized;
}

/** True when `path` is absolute and already normalized (no `.`, `..`, `//` or trailing slash). */
export function isCanonicalPath(path: string): boolean {
  return normalizeAbsolutePath(path) === path;
}

/** True when `path` is `prefix` or lies under it: `/etc` covers `/etc/passwd`, not `/etcetera`. */
export function isPathWithin(path: string, prefix: string): boolean {
  return prefix === '/' || path === prefix || path.startsWith(`${prefix}/`);
}

/** Answers "may this call touch this path?" from the contract's filesystem lists. */
export class FilesystemPolicy {
  readonly #rules: FilesystemRules;

  /** Takes lists already normalized by the contract parser. */
  constructor(rules: FilesystemRules) {
    this.#rules = rules;
  }

  /** Checks one access to a canonical absolute path (resolve symlinks first: this check is lexical). */
  check(path: string, access: FileAccess, options: FilesystemCheckOptions = {}): FilesystemDecision {
    if (!isCanonicalPath(path)) {
      return {
        decision: 'deny',
        reason: `path "${path}" is not canonical; pass an absolute path without ".", ".." or trailing "/"`,
        rule: { list: 'path', prefix: path },
      };
    }
    const verb = access === 'read' ? 'reading' : 'writing';
    const subtree = options.subtree === true;
    const hidden = this.#match(path, this.#rules.denyRead, subtree);
    if (hidden !== undefined) {
      return deny(`${verb} ${path} is denied: ${hidden} is listed in filesystem.denyRead`, 'denyRead', hidden);
    }
    if (access === 'read') return ALLOWED;
    const denied = this.#match(path, this.#rules.denyWrite, subtree);
    if (denied !== undefined) {
      return deny(`writing ${path} is denied: ${denied} is listed in filesystem.denyWrite`, 'denyWrite', denied);
    }
    const readOnly = this.#match(path, this.#rules.readOnly, subtree);
    if (readOnly !== undefined) {
      return deny(`writing ${path} is denied: ${readOnly} is read-only (filesystem.readOnly)`, 'readOnly', readOnly);
    }
    const allowWrite = this.#rules.allowWrite;
    if (allowWrite !== undefined && !allowWrite.some((prefix) => isPathWithin(path, prefix))) {
      const where = allowWrite.length === 0 ? 'nowhere' : `only under ${allowWrite.join(', ')}`;
      return deny(`writing ${path} is denied: filesystem.allowWrite permits writes ${where}`, 'allowWrite', path);
    }
    return ALLOWED;
  }

  /** Checks every access a file tool needs (files.edit: read and write). */
  checkTool(tool: FileToolName, path: string, options: FilesystemCheckOptions = {}): FilesystemDecision {
    for (const access of FILE_TOOL_ACCESS[tool]) {
      const decision = this.check(path, access, options);
      if (decision.decision === 'deny') return decision;
    }
    return ALLOWED;
  }

  #match(path: string, prefixes: readonly string[], subtree: boolean): string | undefined {
    return prefixes.find((prefix) => isPathWithin(path, prefix) || (subtree && isPathWithin(prefix, path)));
  }
}

const ALLOWED: FilesystemDecision = Object.freeze({ decision: 'allow', reason: 'no filesystem rule applies' });

function deny(reason: string, list: FilesystemRuleList, prefix: string): FilesystemDecision {
  return { decision: 'deny', reason, rule: { list, prefix } };
}
