/**
 * Which Debian mirror debootstrap should use: the one this machine's apt
 * already uses (it is known to be reachable from here, and may be a local
 * proxy or snapshot), or the one the operator names (AIRLOCK_DEBIAN_MIRROR).
 * Airlock names no mirror of its own: a machine whose apt names none is
 * asked for one.
 */
import { readFile } from 'node:fs/promises';
import { AirlockError } from '../core/errors.js';

/** The apt source files read, in order of preference. */
export const APT_SOURCE_FILES = ['/etc/apt/sources.list.d/debian.sources', '/etc/apt/sources.list'] as const;

/** Finds the main Debian mirror in the given apt source files (deb822 `.sources` or one-line `.list`). */
export async function detectDebianMirror(files: readonly string[] = APT_SOURCE_FILES): Promise<string | undefined> {
  for (const file of files) {
    const text = await readFile(file, 'utf8').catch(() => undefined);
    if (text === undefined) continue;
    const mirror = file.endsWith('.sources') ? mirrorFromDeb822(text) : mirrorFromSourcesList(text);
    if (mirror !== undefined) return mirror;
  }
  return undefined;
}

/** The mirror to build from: AIRLOCK_DEBIAN_MIRROR, else apt's; neither is an error that says what to set. */
export async function requireDebianMirror(files: readonly string[] = APT_SOURCE_FILES): Promise<string> {
  const named = process.env['AIRLOCK_DEBIAN_MIRROR']?.trim();
  if (named) return named.replace(/\/+$/, '');
  const found = await detectDebianMirror(files);
  if (found !== undefined) return found;
  throw new AirlockError(
    'INVALID_ARGUMENTS',
    `no Debian mirror found in ${files.join(' or ')}; set AIRLOCK_DEBIAN_MIRROR to the URL of a Debian mirror this machine can reach (the one apt would use)`,
  );
}

/** The first `deb` URI of an enabled deb822 stanza that is not the security archive. */
export function mirrorFromDeb822(text: string): string | undefined {
  for (const stanza of text.split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    let last: string | undefined;
    for (const line of stanza.split('\n')) {
      if (line.startsWith('#') || line.trim() === '') continue;
      if (/^\s/.test(line) && last !== undefined) {
        fields.set(last, `${fields.get(last) ?? ''} ${line.trim()}`);
        continue;
      }
      const match = /^([A-Za-z-]+):\s*(.*)$/.exec(line);
      if (match === null) continue;
      last = (match[1] as string).toLowerCase();
      fields.set(last, (match[2] as string).trim());
    }
    if (fields.get('enabled')?.toLowerCase() === 'no') continue;
    if (!(fields.get('types') ?? '').split(/\s+/).includes('deb')) continue;
    const suites = (fields.get('suites') ?? '').split(/\s+/).filter(Boolean);
    if (suites.length > 0 && suites.every((suite) => suite.endsWith('-security'))) continue;
    const uri = (fields.get('uris') ?? '').split(/\s+/).find(usableUri);
    if (uri !== undefined) return trimSlash(uri);
  }
  return undefined;
}

/** The URI of the first `deb` line (not `deb-src`, not the security archive) of a one-line sources.list. */
export function mirrorFromSourcesList(text: string): string | undefined {
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*$/, '').trim();
    // deb [ options ] uri suite components...
    const match = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line);
    if (match === null) continue;
    const uri = match[1] as string;
    if ((match[2] as string).endsWith('-security') || !usableUri(uri)) continue;
    return trimSlash(uri);
  }
  return undefined;
}

function usableUri(uri: string): boolean {
  // debootstrap fetches over http(s) and reads file: mirrors; apt-only schemes (mirror+, cdrom:, tor+) it cannot use
  return /^(https?:\/\/|file:\/)/.test(uri) && !/debian-security\/?$/.test(uri);
}

function trimSlash(uri: string): string {
  return uri.replace(/\/+$/, '');
}
