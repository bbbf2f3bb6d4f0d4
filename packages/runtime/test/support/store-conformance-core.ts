/** The core the Store conformance suite's pipeline and approval cases run on: the fake driver over a given store. */
import type { ConformanceCore } from '../../src/stores/conformance/store-conformance.js';
import type { Store } from '../../src/core/store.js';
import { coreFixture } from './core-fixture.js';

/** Builds the core over `store`, with `auditKey` shared by every core of the run. */
export function conformanceCore(store: Store, auditKey: Buffer): ConformanceCore {
  const fx = coreFixture({ store, auditKey });
  return {
    records: fx.records,
    pipeline: fx.pipeline,
    approvals: fx.approvals,
    audit: fx.audit,
    driver: fx.driver,
    contract: (extra) => fx.contract(extra),
    createSession: (contract) => fx.sessions.create({ contract }),
    close: () => fx.close(),
  };
}
