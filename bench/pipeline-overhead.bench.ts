/**
 * Issue 3's figures: the airlock's overhead per call. p50/p99 of the policy
 * decision alone (contract checks + Cedar) for the example contract, and of a
 * whole `exec true` through the pipeline (in process, and over HTTP through
 * the SDK) beside the same command straight on the driver, in the same run,
 * and a 4 KiB file write and read through the SDK.
 * Usage: npx tsx bench/pipeline-overhead.bench.ts [calls]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, parseContract } from '@airlock/runtime';
import { Sandbox } from '@airlock/sdk';
import type { GvisorDriver } from '../packages/runtime/dist/src/drivers/gvisor/index.js';
import { ContractAuthorizer } from '../packages/runtime/dist/src/policy/contract-authorizer.js';
import { analyzeCommand } from '../packages/runtime/dist/src/policy/shell-analysis.js';
import { quantile, timed } from './stats.js';

const calls = Number.parseInt(process.argv[2] ?? '40', 10);
const work = mkdtempSync('/var/tmp/airlock-bench-');
const contract = parseContract(JSON.parse(readFileSync(new URL('../examples/contracts/no-rm-approve-tar.json', import.meta.url), 'utf8')));
const server = await startServer({ dataDir: join(work, 'data'), host: '127.0.0.1', port: 0, token: 'bench' });
const row = (name: string, samples: number[]) =>
  `| ${name} | ${quantile(samples, 0.5).toFixed(3)} | ${quantile(samples, 0.99).toFixed(3)} | ${samples.length} |`;

try {
  const sandbox = await Sandbox.create({ url: server.url, token: 'bench', contract });
  const session = await server.services.sessions.get(sandbox.id);

  // the decision alone, as the pipeline makes it
  const authorizer = new ContractAuthorizer();
  const commands = ['ls -la /workspace', 'sh -c "ls && rm -rf /workspace"', 'tar czf a.tgz src', 'python3 -m pytest -q'];
  const decisions: number[] = [];
  for (let i = 0; i < 11_000; i += 1) {
    const command = commands[i % commands.length] ?? '';
    const started = process.hrtime.bigint();
    const analysis = analyzeCommand({ command });
    authorizer.authorize(session, { tool: 'exec', command, programs: analysis.programs, argv: [], analysable: analysis.analysable, analysisNotes: analysis.reasons, path: '', cwd: '/workspace', tenant: 'acme', callCount: i, identicalFailures: 0, branches: 0, access: 'none', env: {} });
    if (i >= 1000) decisions.push(Number(process.hrtime.bigint() - started) / 1e6);
  }

  // The server's own driver: a second driver on the same state root would take over the machine's agent.
  const driver = server.services.sessions.drivers.get('gvisor') as GvisorDriver;
  const handle = (await server.services.sessions.get(sandbox.id)).sandbox;
  if (!handle) throw new Error('no sandbox');
  const direct: number[] = [];
  const pipeline: number[] = [];
  const http: number[] = [];
  const fileWrite: number[] = [];
  const fileRead: number[] = [];
  const content = 'x'.repeat(4096);
  for (let i = 0; i < calls; i += 1) {
    direct.push(await timed(() => driver.exec(handle, { argv: ['true'], cwd: '/workspace', env: {}, timeoutMs: 30_000 })));
    pipeline.push(await timed(() => server.services.pipeline.submit(sandbox.id, 'exec', { argv: ['true'] })));
    http.push(await timed(() => sandbox.commands.run(['true'])));
    fileWrite.push(await timed(() => sandbox.files.write('/workspace/bench.txt', content)));
    fileRead.push(await timed(() => sandbox.files.read('/workspace/bench.txt')));
  }
  const added = pipeline.map((value, index) => value - (direct[index] ?? 0));
  const lines = [
    `### Pipeline overhead (${calls} calls each, interleaved; decision: 10,000 calls after 1,000 warm-up)`,
    '',
    '| what | p50 (ms) | p99 (ms) | n |',
    '|---|---|---|---|',
    row('decision: command analysis + contract checks + Cedar (example contract)', decisions),
    row('`exec true` on the driver directly (no pipeline)', direct),
    row('`exec true` through the pipeline, in process', pipeline),
    row('`exec true` through HTTP + SDK + pipeline', http),
    row('added by the pipeline (pipeline − direct, paired)', added),
    row('4 KiB `files.write` through HTTP + SDK + pipeline', fileWrite),
    row('4 KiB `files.read` through HTTP + SDK + pipeline', fileRead),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  await sandbox.kill();
} catch (error) {
  process.stderr.write(`benchmark failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
} finally {
  for (const session of await server.services.sessions.list()) {
    if (session.state !== 'terminated') await server.services.sessions.terminate(session.id).catch(() => undefined);
  }
  await server.close();
  rmSync(work, { recursive: true, force: true });
}
