/**
 * Where the driver finds the agent binary: built from
 * `packages/runtime/agent/` by `make` (scripts/setup.sh, `npm run build`)
 * into `packages/runtime/dist/agent/airlock-agent`. Never downloaded.
 */
import { fileURLToPath } from 'node:url';

/** The default host path of the agent binary, from the compiled driver or from its source (tsx). */
export function defaultAgentBinary(): string {
  const compiled = import.meta.url.includes('/dist/src/');
  // dist/src/drivers/gvisor/ → dist/agent/; src/drivers/gvisor/ → dist/agent/
  return fileURLToPath(new URL(compiled ? '../../../agent/airlock-agent' : '../../../dist/agent/airlock-agent', import.meta.url));
}
