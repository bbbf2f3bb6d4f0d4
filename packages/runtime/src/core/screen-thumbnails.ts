/**
 * The port where desktop calls keep the thumbnail of the screen they saw:
 * small PNGs named by call id, per session, bounded (the oldest go first).
 * The audit record of each call holds the thumbnail's sha256, so a kept
 * thumbnail can be checked against the hash chain, and a pruned one is
 * known to have existed. Implemented on the host by `ThumbnailDirectory`.
 */

/** What the audit records of a kept thumbnail. */
export interface ThumbnailReference {
  /** the name it is stored under: the call id */
  name: string;
  sha256: string;
  bytes: number;
  width: number;
  height: number;
}

/** Keeps and serves thumbnails. */
export interface ThumbnailStore {
  /** Stores one PNG (replacing one of the same name) and drops the session's oldest past the bound. */
  put(sessionId: string, name: string, png: Buffer): Promise<void>;
  /** The PNG, or undefined when it was never stored or has been pruned. */
  get(sessionId: string, name: string): Promise<Buffer | undefined>;
}

/** Largest side of a thumbnail, in pixels. */
export const THUMBNAIL_MAX_SIDE = 320;
