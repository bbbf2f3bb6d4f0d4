/**
 * The session's workspace as MCP resources. Every listing and every read is
 * an Airlock tool call (`files.list`, `files.read`) through the same
 * pipeline as the `read` tool: the contract's filesystem rules and Cedar
 * policies apply, a refusal carries the policy's reason, and each call is
 * audited. `resources/list` walks the tree depth first in sorted order, a
 * bounded page at a time (files per page, directory listings per page,
 * depth); directories that are refused or too deep are left out. The pages
 * of one walk reuse its listings (a `files.list` costs tens of milliseconds
 * per entry), so they show the tree as it was when the walk listed it.
 */
import { ErrorCode, type ListResourcesResult, type ListResourceTemplatesResult, type ReadResourceResult, type Resource } from '@modelcontextprotocol/sdk/types.js';
import type { CallOutcome, CallRefusal } from './session-calls.js';
import type { HeldCallResult } from './approval-flow.js';
import { protocolError, REQUEST_REFUSED, RESOURCE_NOT_FOUND } from './protocol-error.js';
import {
  WORKSPACE_URI_TEMPLATE,
  compareSegments,
  decodeCursor,
  encodeCursor,
  holds,
  mimeTypeOf,
  pathOfSegments,
  segmentsOfUri,
  uriOfSegments,
} from './workspace-uri.js';

/** The calls the resources make (a `SessionCalls`). */
export interface ResourceCalls {
  submit(tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<CallOutcome>;
}

/** Settles a read the policy holds for a human (confirmation, bounded wait, or still pending). */
export type SettleHeldRead = (pending: Extract<CallOutcome, { status: 'pending-approval' }>, tool: string, args: Record<string, unknown>) => Promise<HeldCallResult>;

/** Bounds of one `resources/list` page. */
export interface ListingLimits {
  /** most resources per page */
  pageSize: number;
  /** most `files.list` calls of directories not listed before, per page (those that hold the cursor are listed again) */
  listingsPerPage: number;
  /** deepest directory listed, counted from /workspace (its files are at depth + 1) */
  maxDepth: number;
}

/** 100 files, 25 directory listings, 16 levels. */
export const DEFAULT_LISTING_LIMITS: ListingLimits = { pageSize: 100, listingsPerPage: 25, maxDepth: 16 };
/** Largest file `resources/read` returns. */
export const MAX_RESOURCE_BYTES = 4 * 1024 * 1024;

interface ListedEntry {
  name: string;
  type: string;
  size: number;
  modifiedAt?: string;
}

// Sorts after every real name (code unit order): a position past a whole directory.
const PAST_EVERYTHING = '\uffff';
/** How long the listings of a walk serve its later pages. */
const LISTING_REUSE_MS = 5 * 60_000;
/** Most directory listings kept for a walk's later pages. */
const MAX_KEPT_LISTINGS = 1000;

type Listing = { entries: ListedEntry[] } | { refusal: CallOutcome };

/** Lists and reads the workspace of one session. */
export class WorkspaceResources {
  /** directory path → its listing in the current walk, and when it was made */
  private readonly listings = new Map<string, { listing: Listing; at: number }>();

  constructor(
    private readonly calls: ResourceCalls,
    private readonly limits: ListingLimits = DEFAULT_LISTING_LIMITS,
  ) {}

  /** The template clients fill in to read any workspace file. */
  templates(): ListResourceTemplatesResult {
    return {
      resourceTemplates: [
        {
          uriTemplate: WORKSPACE_URI_TEMPLATE,
          name: 'workspace',
          title: 'Session workspace files',
          description: 'A file of the session machine under /workspace; {path} is relative to it (e.g. src/main.py). Reads pass the session policy.',
        },
      ],
    };
  }

  /** One page of the workspace's files, after `cursor`. */
  async list(cursor: string | undefined, signal: AbortSignal): Promise<ListResourcesResult> {
    const { pageSize, listingsPerPage, maxDepth } = this.limits;
    const resources: Resource[] = [];
    let position = cursor === undefined ? [] : decodeCursor(cursor);
    if (cursor === undefined) this.listings.clear(); // a new walk
    let listings = 0;
    let full = false;
    const advance = (to: string[]) => {
      if (compareSegments(to, position) > 0) position = to;
    };
    // Returns false when the page is full; the walk then stops where `position` says. Listing again the
    // directories that hold the cursor (at most maxDepth) is not counted, so that every page moves on.
    const visit = async (directory: string[]): Promise<boolean> => {
      let listing = this.kept(directory);
      if (!listing) {
        const resumed = holds(directory, position);
        if (!resumed && listings >= listingsPerPage) return !(full = true);
        if (!resumed) listings += 1;
        listing = await this.listDirectory(directory, signal);
      }
      if ('refusal' in listing) {
        const outcome = listing.refusal;
        if (directory.length === 0) throw refusalError(outcome.status === 'refused' ? outcome : heldRefusal(outcome as Extract<CallOutcome, { status: 'pending-approval' }>), uriOfSegments([]));
        advance([...directory, PAST_EVERYTHING]); // refused or held: left out, with all it holds
        return true;
      }
      advance(directory);
      const entries = listing.entries;
      for (const entry of entries) {
        const path = [...directory, entry.name];
        const order = compareSegments(path, position);
        if (entry.type === 'directory') {
          // Before the cursor, only a directory that holds it is entered, and not once it is all done.
          if (order < 0 && !(holds(path, position) && position[path.length] !== PAST_EVERYTHING)) continue;
          if (path.length > maxDepth) {
            advance([...path, PAST_EVERYTHING]);
            continue;
          }
          if (!(await visit(path))) return false;
          advance([...path, PAST_EVERYTHING]);
        } else if (order > 0) {
          if (entry.type !== 'file') {
            advance(path); // symlinks and devices are not resources
            continue;
          }
          if (resources.length >= pageSize) return !(full = true);
          resources.push(resourceOf(path, entry));
          advance(path);
        }
      }
      return true;
    };
    await visit([]);
    return { resources, ...(full ? { nextCursor: encodeCursor(position) } : {}) };
  }

  private kept(directory: string[]): Listing | undefined {
    const kept = this.listings.get(pathOfSegments(directory));
    return kept && Date.now() - kept.at < LISTING_REUSE_MS ? kept.listing : undefined;
  }

  private async listDirectory(directory: string[], signal: AbortSignal): Promise<Listing> {
    const outcome = await this.calls.submit('files.list', { path: pathOfSegments(directory) }, signal);
    const listing: Listing =
      outcome.status === 'completed'
        ? { entries: ((outcome.result['entries'] as ListedEntry[] | undefined) ?? []).slice().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) }
        : { refusal: outcome };
    if (this.listings.size >= MAX_KEPT_LISTINGS) this.listings.delete(this.listings.keys().next().value as string);
    this.listings.set(pathOfSegments(directory), { listing, at: Date.now() });
    return listing;
  }

  /** The content of one workspace file: text when it is UTF-8, else base64. */
  async read(uri: string, signal: AbortSignal, settle: SettleHeldRead): Promise<ReadResourceResult> {
    const segments = segmentsOfUri(uri);
    const args = { path: pathOfSegments(segments), encoding: 'base64', maxBytes: MAX_RESOURCE_BYTES };
    let outcome = await this.calls.submit('files.read', args, signal);
    if (outcome.status === 'pending-approval') outcome = (await settle(outcome, 'files.read', args)).outcome;
    if (outcome.status === 'pending-approval') throw refusalError(heldRefusal(outcome), uri);
    if (outcome.status === 'refused') throw refusalError(outcome, uri);
    const result = outcome.result;
    if (result['truncated']) {
      throw protocolError(REQUEST_REFUSED, `PAYLOAD_TOO_LARGE: ${String(result['path'])} is ${Number(result['size'])} bytes, above the ${MAX_RESOURCE_BYTES} bytes a resource read returns; read parts of it with the read tool (offset, limit) or bash`, {
        code: 'PAYLOAD_TOO_LARGE',
        uri,
      });
    }
    const bytes = Buffer.from(String(result['content'] ?? ''), 'base64');
    const text = bytes.includes(0) ? undefined : utf8(bytes);
    const name = segments.at(-1) as string;
    if (text !== undefined) return { contents: [{ uri, mimeType: mimeTypeOf(name) ?? 'text/plain', text }] };
    return { contents: [{ uri, mimeType: mimeTypeOf(name) ?? 'application/octet-stream', blob: bytes.toString('base64') }] };
  }
}

function resourceOf(path: string[], entry: ListedEntry): Resource {
  const mimeType = mimeTypeOf(entry.name);
  return {
    uri: uriOfSegments(path),
    name: path.join('/'),
    ...(mimeType ? { mimeType } : {}),
    size: entry.size,
    ...(entry.modifiedAt ? { annotations: { lastModified: entry.modifiedAt } } : {}),
  };
}

function heldRefusal(pending: Extract<CallOutcome, { status: 'pending-approval' }>): CallRefusal {
  return {
    status: 'refused',
    code: 'APPROVAL_PENDING',
    message: `the session policy holds this read for a human (approval ${pending.approvalId}); once \`airlock approvals approve ${pending.approvalId}\` ran it, its content is in the approval's outcome (the await_approval tool returns it)`,
    decision: pending.decision,
  };
}

/** A refused read or listing as a JSON-RPC error: "resource not found", or the refusal with its code and the policy's reason. */
function refusalError(refusal: CallRefusal, uri: string): Error {
  if (refusal.code === 'FILE_NOT_FOUND') return protocolError(RESOURCE_NOT_FOUND, `Resource not found: ${refusal.message}`, { uri, code: refusal.code });
  if (refusal.code === 'INVALID_ARGUMENTS') return protocolError(ErrorCode.InvalidParams, `${refusal.code}: ${refusal.message}`, { uri, code: refusal.code });
  const reason = refusal.decision?.reason;
  const message = `${refusal.code}: ${refusal.message}${reason && reason !== refusal.message ? `\npolicy reason: ${reason}` : ''}`;
  return protocolError(REQUEST_REFUSED, message, { uri, code: refusal.code, policyIds: refusal.decision?.policyIds ?? [], ...(reason ? { reason } : {}) });
}

function utf8(bytes: Buffer): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
