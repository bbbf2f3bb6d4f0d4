/**
 * E2B sandboxes as Airlock sessions: what the E2B control plane knows of a
 * session beyond its record (template, metadata, env vars, timeout), and the
 * mapping between the two vocabularies. Nothing here runs a tool call.
 */
import type { SessionRecord, SessionState } from '../../core/session.js';

/** The envd version Airlock's sandbox plane answers as (the SDK gates features on it). */
export const ENVD_VERSION = '0.6.4';

/** Prefix of the E2B API's paths on Airlock's listener: E2B_API_URL and E2B_SANDBOX_URL are `<server>/e2b`. */
export const E2B_PREFIX = '/e2b';

/** What the E2B API recorded about one of its sandboxes. */
export interface E2bSandboxInfo {
  templateId: string;
  metadata: Record<string, string>;
  envVars: Record<string, string>;
  startedAt: Date;
  endAt: Date;
  /** on timeout: suspend (memory kept) instead of terminate */
  autoPause: boolean;
}

/** E2B's view of Airlock's session states. */
export function e2bState(state: SessionState): 'running' | 'paused' {
  return state === 'paused' || state === 'suspended' ? 'paused' : 'running';
}

/** Whether an E2B path is this API's (any letter case is not: E2B's paths are exact). */
export function isE2bUrl(url: string): boolean {
  return url === E2B_PREFIX || url.startsWith(`${E2B_PREFIX}/`);
}

/** E2B's error body: `{ code, message }` with the HTTP status as code. */
export function e2bErrorBody(status: number, message: string): { code: number; message: string } {
  return { code: status, message };
}

/** Parses E2B's metadata filter (`key=value&key2=value2`, each part URL-encoded) into pairs. */
export function parseMetadataFilter(filter: string | undefined): Record<string, string> {
  if (filter === undefined || filter === '') return {};
  const pairs: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(filter)) pairs[decodeURIComponent(key)] = decodeURIComponent(value);
  return pairs;
}

/** The body E2B's API answers for one sandbox (list and get). */
export function sandboxBody(session: SessionRecord, info: E2bSandboxInfo | undefined): Record<string, unknown> {
  return {
    sandboxID: session.id,
    templateID: info?.templateId ?? 'base',
    clientID: 'airlock',
    alias: info?.templateId ?? 'base',
    metadata: info?.metadata ?? {},
    startedAt: (info?.startedAt ?? new Date(session.createdAt)).toISOString(),
    endAt: (info?.endAt ?? new Date(Date.parse(session.createdAt) + 24 * 3600_000)).toISOString(),
    state: e2bState(session.state),
    cpuCount: session.resources.cpus,
    memoryMB: session.resources.memoryMb,
    diskSizeMB: 0,
    envdVersion: ENVD_VERSION,
    volumeMounts: [],
  };
}
