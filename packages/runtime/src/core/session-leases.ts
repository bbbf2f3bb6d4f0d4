/**
 * The leases this node holds: for each session it owns, the epoch it took
 * the session at. Every write of a held session names that epoch, and the
 * store refuses it once another node took the session (a higher epoch), so
 * that a node paused or cut off past its lease can never act on a session
 * that now runs elsewhere. A lease found lost is forgotten and reported, so
 * that the node drops what it still has of the session on its host.
 */

/** Leases held by this node, by session id. */
export class SessionLeases {
  private readonly held = new Map<string, number>();
  private readonly lost = new Set<string>();
  private readonly lostListeners = new Set<(sessionId: string) => void>();

  /** Records that this node holds `sessionId` at `epoch` (created, taken over, or found its own at start). */
  hold(sessionId: string, epoch: number): void {
    this.held.set(sessionId, epoch);
    this.lost.delete(sessionId);
  }

  /** The epoch held (or held until it was lost), or undefined when this node never held the session. */
  epochOf(sessionId: string): number | undefined {
    return this.held.get(sessionId);
  }

  /** Forgets a lease that ended normally (the session was terminated). */
  release(sessionId: string): void {
    this.held.delete(sessionId);
    this.lost.delete(sessionId);
  }

  /** Marks a lease another node took, and tells the listeners (once). */
  lose(sessionId: string): void {
    if (!this.held.has(sessionId) || this.lost.has(sessionId)) return;
    this.lost.add(sessionId);
    for (const listener of this.lostListeners) listener(sessionId);
  }

  /** True once the lease on the session was found taken by another node. */
  isLost(sessionId: string): boolean {
    return this.lost.has(sessionId);
  }

  /** Every lease still held (lost ones left out). */
  entries(): [sessionId: string, epoch: number][] {
    return [...this.held.entries()].filter(([sessionId]) => !this.lost.has(sessionId));
  }

  /** Hears leases found lost; returns the unsubscribe. */
  onLost(listener: (sessionId: string) => void): () => void {
    this.lostListeners.add(listener);
    return () => this.lostListeners.delete(listener);
  }
}
