/**
 * Hears every audit record once its transaction has committed, in chain
 * order: the store's change feed says which records a transaction appended
 * (also those of other servers sharing the store), and the tap reads them.
 * Every state change of a session, every decision and every tool call is
 * audited, so this one tap is what the live event stream needs, without the
 * services knowing about it.
 */
import type { AuditRecord } from '../audit/audit-record.js';
import type { Store } from '../core/store.js';

/** Called with each committed audit record. */
export type AuditListener = (record: AuditRecord) => void;

/** Reports committed audit records of `store` to `listener`; returns the unsubscribe. */
export function tapAuditAppends(store: Store, listener: AuditListener): () => void {
  // One read at a time, in the order the changes were heard: records reach the listener in chain order.
  let reading: Promise<void> = Promise.resolve();
  const unwatch = store.watch((change) => {
    if (change.kind !== 'audit') return;
    reading = reading
      .then(async () => {
        const records = await store.listAudit(change.sessionId, { afterSeq: change.firstSeq - 1, limit: change.seq - change.firstSeq + 1 });
        for (const record of records) {
          try {
            listener(record);
          } catch {
            // A listener's failure must never reach the write that was already committed.
          }
        }
      })
      .catch(() => undefined);
  });
  return unwatch;
}
