/**
 * Issue 6's figures: what the egress gateway adds to a connection, beside a
 * direct connection in the same run. Targets run in a network namespace we
 * create (10.213.19.x, see egress-fixture.ts); the gateway runs here with
 * its real admission path (domain lists, Cedar permit-all, SQLite audit);
 * the client is a separate process so it does not share the gateway's
 * event loop. Modes: plain HTTP (forward proxy), HTTPS (CONNECT tunnel) and
 * HTTPS to a host with a credential binding (TLS terminated, header added,
 * re-encrypted). Latency is a fresh connection per request (TCP [+ TLS] +
 * one small GET); throughput the median of three 32 MiB GETs; direct and gateway requests
 * alternate in one client so machine load hits both alike.
 * Usage: npm run build && npx tsx bench/egress.bench.ts [requests]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteStore } from '@airlock/runtime';
import { EgressGateway } from '../packages/runtime/src/egress/egress-gateway.js';
import { ensureSessionCa, CA_CERT_FILE } from '../packages/runtime/src/egress/session-ca.js';
import { CedarPolicySet } from '../packages/runtime/src/policy/cedar-authorizer.js';
import { DEFAULT_CONTRACT } from '../packages/runtime/src/policy/session-contract.js';
import { startEgressFixture, TEST_HOSTS } from '../packages/cli/test/support/egress-fixture.js';
import { quantile } from './stats.js';
import { randomBytes } from 'node:crypto';
import { AuditLog } from '../packages/runtime/src/audit/audit-log.js';
import { systemClock } from '../packages/runtime/src/core/clock.js';

const requests = Number.parseInt(process.argv[2] ?? '200', 10);
const work = mkdtempSync('/var/tmp/airlock-egress-bench-');
const fixture = await startEgressFixture(19);
const store = new SqliteStore(join(work, 'bench.db'));
const audit = new AuditLog({ key: randomBytes(32), clock: systemClock });
const cedar = new CedarPolicySet(DEFAULT_CONTRACT);
const SESSION = 'ses_bench';
const network = { allowedDomains: [TEST_HOSTS.allowed, TEST_HOSTS.bound] };
const credentials = [{ secret: 'BENCH_TOKEN', hosts: [TEST_HOSTS.bound], header: 'Authorization', format: 'Bearer {secret}' }];
const gateway = new EgressGateway({
  policyOf: async () => ({ network, credentials, contractVersion: 1 }),
  authorize: async (sessionId, host, port) => {
    const decision = cedar.authorizeConnection({ sessionId, host, port });
    return { allowed: decision.decision === 'allow', reason: decision.reason, policyIds: decision.policyIds };
  },
  audit: (sessionId, type, data) => void audit.appendNow(store, { sessionId, type, data }),
  secretValue: () => 'bench-token-value',
  hosts: fixture.hosts,
  upstreamCa: [readFileSync(fixture.caFile, 'utf8')],
});

// The client: one process, fresh connection per request, prints JSON samples.
const CLIENT = String.raw`
import http from 'node:http'; import https from 'node:https'; import tls from 'node:tls'; import fs from 'node:fs';
const [mode, target, gw, n, bytes, testCa, sessionCa] = process.argv.slice(1);
const ca = [fs.readFileSync(testCa), fs.readFileSync(sessionCa)];
const now = () => Number(process.hrtime.bigint()) / 1e6;
function viaConnect(host) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: gw, port: 3128, method: 'CONNECT', path: host + ':443', agent: false });
    req.on('connect', (res, socket) => res.statusCode === 200 ? resolve(socket) : reject(new Error('CONNECT ' + res.statusCode)));
    req.on('error', reject); req.end();
  });
}
async function get(kind, host, path) {
  return new Promise(async (resolve, reject) => {
    const done = (res) => { let size = 0; res.on('data', (c) => size += c.length); res.on('end', () => resolve(size)); res.on('error', reject); };
    if (kind === 'http-direct') http.get({ host: target, port: 80, path, headers: { host }, agent: false }, done).on('error', reject);
    else if (kind === 'http-gateway') http.get({ host: gw, port: 3128, path: 'http://' + host + path, agent: false }, done).on('error', reject);
    else if (kind === 'https-direct') https.get({ host: target, port: 443, path, servername: host, headers: { host }, ca, agent: false }, done).on('error', reject);
    else {
      const socket = await viaConnect(host).catch(reject);
      if (!socket) return;
      https.get({ host, path, createConnection: () => tls.connect({ socket, servername: host, ca }) }, done).on('error', reject);
    }
  });
}
// Direct and gateway requests alternate, so the (noisy, shared) machine's load hits both alike.
const [direct, proxied] = mode.split(',').map((m) => m.split('@'));
const samples = { direct: [], gateway: [] };
for (let i = 0; i < Number(n); i++) {
  for (const [name, [kind, host]] of [['direct', direct], ['gateway', proxied]]) {
    const path = Number(bytes) > 0 ? '/bytes/' + bytes : '/small';
    const t = now(); const size = await get(kind, host, path); samples[name].push({ ms: now() - t, size });
  }
}
process.stdout.write(JSON.stringify(samples));
`;

type Samples = Record<'direct' | 'gateway', { ms: number; size: number }[]>;

function client(mode: string, count: number, bytes: number): Promise<Samples> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', CLIENT, mode, fixture.allowedAddress, fixture.hostAddress, String(count), String(bytes), fixture.caFile, join(work, CA_CERT_FILE)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Samples) : reject(new Error(`client ${mode} exited with ${code}`))));
  });
}

try {
  await ensureSessionCa(work, SESSION, [TEST_HOSTS.bound]);
  await gateway.open(SESSION, fixture.hostAddress, work);
  const modes: [string, string, string][] = [
    ['HTTP', `http-direct@${TEST_HOSTS.allowed}`, `http-gateway@${TEST_HOSTS.allowed}`],
    ['HTTPS (CONNECT tunnel)', `https-direct@${TEST_HOSTS.allowed}`, `https-gateway@${TEST_HOSTS.allowed}`],
    ['HTTPS, credential injected (TLS terminated)', `https-direct@${TEST_HOSTS.bound}`, `https-gateway@${TEST_HOSTS.bound}`],
  ];
  const lines = [
    `### Egress gateway vs direct (${requests} request pairs per row, alternating, fresh connection each; throughput: median of 3 × 32 MiB)`,
    '',
    '| mode | direct p50 (ms) | gateway p50 (ms) | added p50 (ms) | direct p99 | gateway p99 | direct MB/s | gateway MB/s |',
    '|---|---|---|---|---|---|---|---|',
  ];
  const bytes = 32 * 1024 * 1024;
  for (const [label, direct, proxied] of modes) {
    const pair = `${direct},${proxied}`;
    await client(pair, 10, 0); // warm-up: leaf certificate issue, JIT
    const latency = await client(pair, requests, 0);
    const d = latency.direct.map((s) => s.ms);
    const g = latency.gateway.map((s) => s.ms);
    const bulk = await client(pair, 3, bytes);
    // MB/s of the median of three transfers
    const mbps = (runs: { ms: number; size: number }[]) => (bytes / 1048576 / (quantile(runs.map((r) => r.ms), 0.5) / 1000)).toFixed(0);
    lines.push(
      `| ${label} | ${quantile(d, 0.5).toFixed(2)} | ${quantile(g, 0.5).toFixed(2)} | ${(quantile(g, 0.5) - quantile(d, 0.5)).toFixed(2)} | ${quantile(d, 0.99).toFixed(2)} | ${quantile(g, 0.99).toFixed(2)} | ${mbps(bulk.direct)} | ${mbps(bulk.gateway)} |`,
    );
  }
  const audited = (await store.listAudit(SESSION)).length;
  lines.push('', `Audit records written by the gateway during the run: ${audited}.`);
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  await gateway.closeAll();
  await store.close();
  await fixture.dispose();
  rmSync(work, { recursive: true, force: true });
}
