/**
 * What each token holds open: terminals, live views, desktop takeovers,
 * event streams, MCP sessions, approval long polls. Each registers here with
 * the token it was opened with and leaves when it ends, so that a revoked
 * token loses all of it at once (`endToken`), on this server when the revoke
 * was asked here, and within a sweep (about a second) when another server
 * sharing the store revoked it. The per-token caps of the kinds a caller can
 * open many of are counted here too: one token can never take another's.
 */
import { AirlockError } from '../core/errors.js';

/** The kinds of things a token can hold open. */
export type OpenKind = 'event-stream' | 'approval-stream' | 'mcp-session' | 'terminal' | 'live-view' | 'desktop-takeover' | 'approval-wait';

/** Per token, at most this many of each kind at once (absent: no cap beyond what the kind's own code bounds). */
export const OPEN_CAPS: Partial<Record<OpenKind, { cap: number; what: string; free: string }>> = {
  'event-stream': { cap: 32, what: 'event streams (GET /v1/events)', free: 'close a console tab or an event stream of this token' },
  'approval-stream': { cap: 32, what: 'approval event streams (GET /v1/approvals/events)', free: 'close an approval event stream of this token' },
  'mcp-session': {
    cap: 64,
    what: 'MCP sessions',
    free: 'end an MCP session of this token (DELETE /mcp with its mcp-session-id), or wait for an idle one to expire',
  },
};

/** One thing held open, as the registry keeps it. */
export interface OpenHandle {
  readonly tokenId: string;
  readonly kind: OpenKind;
  /** Leaves the registry without closing (the thing ended by itself); idempotent. */
  release(): void;
}

/** Options of the registry. */
export interface OpenByTokenOptions {
  /** false once the token was revoked (asked of the store, which servers share) */
  isLive(tokenId: string): Promise<boolean>;
  /** between sweeps; 0 turns the sweep off (default 1000) */
  sweepMs?: number;
  /** also called for every ended token (e.g. to end its console logins) */
  onEnd?: (tokenId: string) => void;
}

interface Entry extends OpenHandle {
  close(): void;
}

/** The registry of what is open, by token. */
export class OpenByToken {
  private readonly byToken = new Map<string, Set<Entry>>();
  private readonly timer: NodeJS.Timeout | undefined;
  private sweeping = false;

  constructor(private readonly options: OpenByTokenOptions) {
    const every = options.sweepMs ?? 1000;
    this.timer = every > 0 ? setInterval(() => void this.sweep(), every).unref() : undefined;
  }

  /**
   * Registers something opened with `tokenId`; `close` ends it (a socket
   * closed, a stream ended) when the token is revoked. Over the kind's cap
   * for this token: QUOTA_EXCEEDED (429), and nothing is registered.
   */
  open(tokenId: string, kind: OpenKind, close: () => void): OpenHandle {
    let entries = this.byToken.get(tokenId);
    const limit = OPEN_CAPS[kind];
    if (limit && this.count(tokenId, kind) >= limit.cap) {
      throw new AirlockError(
        'QUOTA_EXCEEDED',
        `this token has ${limit.cap} ${limit.what} open already, the most one token may hold; ${limit.free}, then retry`,
        {
          details: { tokenId, kind, cap: limit.cap },
        },
      );
    }
    if (!entries) {
      entries = new Set();
      this.byToken.set(tokenId, entries);
    }
    const set = entries;
    const entry: Entry = {
      tokenId,
      kind,
      close,
      release: () => {
        set.delete(entry);
        if (set.size === 0 && this.byToken.get(tokenId) === set) this.byToken.delete(tokenId);
      },
    };
    set.add(entry);
    return entry;
  }

  /** How many things of one kind a token holds open. */
  count(tokenId: string, kind?: OpenKind): number {
    let count = 0;
    for (const entry of this.byToken.get(tokenId) ?? []) if (kind === undefined || entry.kind === kind) count += 1;
    return count;
  }

  /** Closes everything a token holds open (it was revoked); answers how many. */
  endToken(tokenId: string): number {
    const entries = this.byToken.get(tokenId);
    this.byToken.delete(tokenId);
    this.options.onEnd?.(tokenId);
    if (!entries) return 0;
    for (const entry of entries) {
      try {
        entry.close();
      } catch {
        // One that fails to close must not keep the others open.
      }
    }
    return entries.size;
  }

  /** Ends the tokens that are no longer live (revoked by any server sharing the store). */
  async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      for (const tokenId of [...this.byToken.keys()]) {
        const live = await this.options.isLive(tokenId).catch(() => true);
        if (!live) this.endToken(tokenId);
      }
    } finally {
      this.sweeping = false;
    }
  }

  /** Stops the sweep (the server is closing). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
