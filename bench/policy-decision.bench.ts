/**
 * Latency of one policy decision for the example contract of the policy
 * brief: `CedarPolicySet.authorize`, shell analysis included, plus the parts
 * on their own. Prints figures, never fails.
 *
 *   npx tsx bench/policy-decision.bench.ts [calls=10000]
 */
import { readFileSync } from 'node:fs';
import { CedarPolicySet, type AuthorizationRequest } from '../packages/runtime/src/policy/cedar-authorizer.js';
import { FilesystemPolicy } from '../packages/runtime/src/policy/filesystem-policy.js';
import { parseContract } from '../packages/runtime/src/policy/session-contract.js';
import { analyzeCommand } from '../packages/runtime/src/policy/shell-analysis.js';

const CALLS = Number(process.argv[2] ?? 10_000);
const WARMUP = 1_000;

// The example contract, as shipped in examples/ (one copy, not two).
const contract = parseContract(JSON.parse(readFileSync(new URL('../examples/contracts/no-rm-approve-tar.json', import.meta.url), 'utf8')));

// A mix of the three outcomes and of tools, as an agent session would send.
const requests: AuthorizationRequest[] = [
  { sessionId: 'ses_bench', tool: 'exec', command: 'cd /workspace && npm test -- --grep "parser" 2>&1 | tail -n 50', callCount: 12 },
  { sessionId: 'ses_bench', tool: 'exec', command: 'rm -rf /workspace/build', callCount: 13 },
  { sessionId: 'ses_bench', tool: 'exec', command: 'tar czf out.tgz dist', callCount: 14 },
  { sessionId: 'ses_bench', tool: 'files.read', path: '/workspace/src/index.ts', callCount: 15 },
  { sessionId: 'ses_bench', tool: 'files.write', path: '/workspace/src/index.ts', callCount: 16 },
];

function measure(label: string, run: (index: number) => unknown): void {
  for (let index = 0; index < WARMUP; index++) run(index);
  const samples = new Float64Array(CALLS);
  for (let index = 0; index < CALLS; index++) {
    const start = process.hrtime.bigint();
    run(index);
    samples[index] = Number(process.hrtime.bigint() - start) / 1000;
  }
  samples.sort();
  const at = (quantile: number): string => (samples[Math.min(CALLS - 1, Math.floor(quantile * CALLS))] ?? 0).toFixed(1);
  console.log(`${label.padEnd(44)} p50 ${at(0.5).padStart(7)} µs   p99 ${at(0.99).padStart(7)} µs   max ${(samples[CALLS - 1] ?? 0).toFixed(0)} µs`);
}

const compileStart = process.hrtime.bigint();
const policies = new CedarPolicySet(contract);
console.log(`compile the contract's policy set: ${(Number(process.hrtime.bigint() - compileStart) / 1e6).toFixed(1)} ms (once per contract)`);
console.log(`${CALLS} calls after ${WARMUP} warm-up, Node ${process.version}\n`);

const pick = (index: number): AuthorizationRequest => requests[index % requests.length] as AuthorizationRequest;
const analysed = requests.map((request) =>
  request.command === undefined ? request : { ...request, analysis: analyzeCommand({ command: request.command }) },
);

measure('authorize (mixed, analysis included)', (index) => policies.authorize(pick(index)));
measure('authorize (mixed, analysis precomputed)', (index) => policies.authorize(analysed[index % analysed.length] as AuthorizationRequest));
measure('authorize exec "rm -rf ..." (deny)', () => policies.authorize(requests[1] as AuthorizationRequest));
measure('analyzeCommand (typical command)', () => analyzeCommand({ command: requests[0]?.command ?? '' }));
const filesystem = new FilesystemPolicy(contract.filesystem);
measure('FilesystemPolicy.check (write)', () => filesystem.check('/workspace/src/index.ts', 'write'));
