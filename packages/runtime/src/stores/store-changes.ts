/**
 * What both stores share around transactions: the listeners of committed
 * changes, the changes and after-commit callbacks a transaction collects,
 * and the guard against nested transactions (which would deadlock on the
 * embedded store and silently escape the outer one on a shared store).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { AirlockError } from '../core/errors.js';
import type { StoreChange } from '../core/store.js';

/** Listeners of committed changes. */
export class ChangeListeners {
  private readonly listeners = new Set<(change: StoreChange) => void>();

  /** Adds a listener; returns its removal. */
  add(listener: (change: StoreChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tells every listener; a listener's failure never reaches the writer. */
  emit(changes: readonly StoreChange[]): void {
    for (const change of changes) {
      for (const listener of this.listeners) {
        try {
          listener(change);
        } catch {
          // the change is committed whatever a listener does with it
        }
      }
    }
  }
}

/** What one transaction collects until it commits. */
export class CommitEffects {
  readonly changes: StoreChange[] = [];
  private readonly callbacks: (() => void)[] = [];

  /** Runs `callback` after the commit. */
  afterCommit(callback: () => void): void {
    this.callbacks.push(callback);
  }

  /** Records an approval or audit change to announce. */
  change(change: StoreChange): void {
    if (change.kind === 'audit') {
      // one announcement per chain and transaction, for the range of records it appended
      const previous = this.changes.findIndex((known) => known.kind === 'audit' && known.sessionId === change.sessionId);
      const known = this.changes[previous];
      if (known?.kind === 'audit') {
        this.changes.splice(previous, 1);
        this.changes.push({ ...change, firstSeq: Math.min(known.firstSeq, change.firstSeq) });
        return;
      }
    }
    this.changes.push(change);
  }

  /** Runs the after-commit callbacks, then tells `listeners`; outside the transaction's context, so they may open new ones. */
  committed(listeners: ChangeListeners): void {
    insideTransaction.exit(() => this.announce(listeners));
  }

  private announce(listeners: ChangeListeners): void {
    for (const callback of this.callbacks) {
      try {
        callback();
      } catch {
        // e.g. the audit head file could not be written: the chain is committed, the anchor lags
      }
    }
    listeners.emit(this.changes);
  }
}

const insideTransaction = new AsyncLocalStorage<true>();

/** Runs `work` marked as inside a transaction; refuses when already inside one. */
export function outermost<T>(work: () => Promise<T>): Promise<T> {
  if (insideTransaction.getStore()) {
    return Promise.reject(
      new AirlockError('INTERNAL', 'a store transaction was opened inside another; pass the open transaction (tx) to the code that writes instead'),
    );
  }
  return insideTransaction.run(true, work);
}
