/**
 * The shared test suite every Store passes (node:test), like the drivers':
 * a store's test file calls `runStoreConformance('postgres', makeContext)`;
 * cases a store cannot run are skipped with the reason.
 */
import { after, before, describe } from 'node:test';
import { auditCases } from './audit-cases.js';
import { concurrencyCases } from './concurrency-cases.js';
import { recordCases } from './record-cases.js';
import { transactionCases } from './transaction-cases.js';
import { clusterCases } from './cluster-cases.js';
import { tenancyCases } from './tenancy-cases.js';
import { webhookCases } from './webhook-cases.js';
import type { StoreConformanceContext } from './store-conformance-context.js';

/** What a store's test file provides to the suite. */
export type { StoreConformanceContext, ConformanceCore } from './store-conformance-context.js';

/** Registers the conformance suite for one store; `makeContext` runs once before the cases. */
export function runStoreConformance(name: string, makeContext: () => Promise<StoreConformanceContext>): void {
  describe(`${name} store conformance`, () => {
    let context: StoreConformanceContext | undefined;
    const getContext = (): StoreConformanceContext => {
      if (!context) throw new Error('store conformance context is not ready (makeContext failed?)');
      return context;
    };
    before(async () => {
      context = await makeContext();
    });
    after(async () => {
      await context?.dispose();
    });
    recordCases(getContext);
    auditCases(getContext);
    transactionCases(getContext);
    concurrencyCases(getContext);
    clusterCases(getContext);
    tenancyCases(getContext);
    webhookCases(getContext);
  });
}
