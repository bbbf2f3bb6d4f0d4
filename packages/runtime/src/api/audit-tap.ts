/**
 * Hears every audit record the control plane appends, once its transaction
 * has committed. Every state change of a session, every decision and every
 * tool call is audited, so this one tap is what the live event stream needs,
 * without the services knowing about it.
 */
import type { AuditRecord } from '../audit/audit-record.js';
import type { Store } from '../core/store.js';

/** Called with each committed audit record. */
export type AuditListener = (record: AuditRecord) => void;

/**
 * The store, with `appendAudit` reported to `listener` after commit (records
 * of a transaction that rolls back are never reported). A Proxy rather than a
 * wrapper class so that methods added to the Store port pass through untouched.
 */
export function tapAuditAppends<T extends Store>(store: T, listener: AuditListener): T {
  // Records appended by each open transaction level; the outermost commit reports them all.
  const levels: AuditRecord[][] = [];
  const report = (records: AuditRecord[]) => {
    for (const record of records) {
      try {
        listener(record);
      } catch {
        // A listener's failure must never fail the write that was already committed.
      }
    }
  };
  const transaction = <R>(work: () => R): R => {
    levels.push([]);
    let committed = false;
    try {
      const result = store.transaction(work);
      committed = true;
      return result;
    } finally {
      const records = levels.pop() ?? [];
      if (committed) {
        const outer = levels[levels.length - 1];
        if (outer) outer.push(...records);
        else report(records);
      }
    }
  };
  const appendAudit = (entry: Parameters<Store['appendAudit']>[0]): AuditRecord => {
    const record = store.appendAudit(entry);
    const open = levels[levels.length - 1];
    if (open) open.push(record);
    else report([record]);
    return record;
  };
  return new Proxy(store, {
    get(target, property) {
      if (property === 'transaction') return transaction;
      if (property === 'appendAudit') return appendAudit;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
