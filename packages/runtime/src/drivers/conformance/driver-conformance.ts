/**
 * The shared test suite every SandboxDriver passes (node:test). A driver's
 * test file calls `runDriverConformance('gvisor', makeContext)`; cases that
 * the driver's capabilities exclude are skipped with the reason, and so is every case that needs a
 * process on a driver that runs none (the fake).
 */
import { after, before, describe } from 'node:test';
import { commandCases } from './command-cases.js';
import type { ConformanceContext } from './conformance-context.js';
import { containmentCases } from './containment-cases.js';
import { lifecycleCases } from './lifecycle-cases.js';
import { identityCases } from './identity-cases.js';
import { portCases } from './port-cases.js';
import { fileCases } from './file-cases.js';
import { machineCases } from './machine-cases.js';
import { networkCases } from './network-cases.js';
import { specificationCases } from './specification-cases.js';

/** What a driver's test file provides to the suite. */
export type { ConformanceContext, SpecOptions } from './conformance-context.js';
/** Resources of conformance sandboxes unless a case asks for others. */
export { DEFAULT_RESOURCES } from './conformance-context.js';

/** Registers the conformance suite for one driver; `makeContext` runs once before the cases. */
export function runDriverConformance(name: string, makeContext: () => Promise<ConformanceContext>): void {
  describe(`${name} driver conformance`, () => {
    let context: ConformanceContext | undefined;
    const getContext = (): ConformanceContext => {
      if (!context) throw new Error('conformance context is not ready (makeContext failed?)');
      return context;
    };
    before(async () => {
      context = await makeContext();
      await context.driver.checkHost();
    });
    after(async () => {
      await context?.dispose();
    });
    specificationCases(getContext);
    commandCases(getContext);
    fileCases(getContext);
    lifecycleCases(getContext);
    identityCases(getContext);
    containmentCases(getContext);
    portCases(getContext);
    machineCases(getContext);
    networkCases(getContext);
  });
}
