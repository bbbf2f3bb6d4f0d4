/**
 * What happened in the control plane, as it happens: committed audit records
 * (state changes, decisions, tool calls) and approval changes, fanned out to
 * the live event streams of the console.
 */
import type { AuditRecord } from '../audit/audit-record.js';
import type { ApprovalRecord } from '../core/approval.js';

/** One thing that happened. */
export type Activity = { kind: 'audit'; record: AuditRecord } | { kind: 'approval'; approval: ApprovalRecord };

/** Receives activities; must not throw and must return quickly (it runs on the writer's stack). */
export type ActivityListener = (activity: Activity) => void;

/** A fan-out of activities to listeners. */
export class ActivityFeed {
  private readonly listeners = new Set<ActivityListener>();

  /** Adds a listener; the returned function removes it. */
  subscribe(listener: ActivityListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Reports an activity to every listener. */
  publish(activity: Activity): void {
    for (const listener of this.listeners) {
      try {
        listener(activity);
      } catch {
        // One broken stream must not stop the others, nor the write that caused it.
      }
    }
  }

  /** How many listeners there are (streams open). */
  get size(): number {
    return this.listeners.size;
  }
}
