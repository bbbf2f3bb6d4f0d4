/**
 * What one webhook endpoint costs an exec round trip (issue 24's figure):
 * one `airlock serve`, one session, `exec true` over HTTP in interleaved
 * blocks with no endpoint and with one endpoint (a receiver on loopback
 * answering 204 to every session event), so both see the same load.
 *
 * Usage (root, after `npm run build`): npx tsx bench/webhook-overhead.bench.ts [calls per block=20] [blocks=5]
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { quantile } from './stats.js';

const perBlock = Math.max(5, Number.parseInt(process.argv[2] ?? '20', 10));
const blocks = Math.max(1, Number.parseInt(process.argv[3] ?? '5', 10));
const dataDir = mkdtempSync('/var/tmp/airlock-bench-webhooks-');
const port = 17000 + Math.floor(Math.random() * 1000);
const token = `bench-${Math.random().toString(36).slice(2)}`;
const url = `http://127.0.0.1:${port}`;
const env = { ...process.env, AIRLOCK_TOKEN: token, AIRLOCK_IMAGES_DIR: process.env['AIRLOCK_IMAGES_DIR'] ?? '/var/tmp/airlock-test/images' };
const server = spawn(process.execPath, ['packages/cli/bin/airlock.js', 'serve', '--data-dir', dataDir, '--listen', `127.0.0.1:${port}`, '--warm-pool', '0'], {
  env,
  stdio: 'ignore',
});
let received = 0;
const receiver = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    received += 1;
    response.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const address = receiver.address();
const receiverUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

try {
  for (let tries = 0; ; tries += 1) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      if (tries > 600) throw new Error('airlock serve did not start');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const session = await api<{ id: string }>('POST', '/v1/sessions', {});
  const exec = async (): Promise<number> => {
    const started = performance.now();
    await api('POST', `/v1/sessions/${session.id}/exec`, { command: 'true' });
    return performance.now() - started;
  };
  for (let index = 0; index < 5; index += 1) await exec();
  const samples: Record<'off' | 'on', number[]> = { off: [], on: [] };
  for (let block = 0; block < blocks; block += 1) {
    for (const mode of block % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
      // WEBHOOK_BENCH_AA=1: both modes without an endpoint, to see the noise of this host.
      const endpoint =
        mode === 'on' && process.env['WEBHOOK_BENCH_AA'] !== '1'
          ? await api<{ id: string }>('POST', '/v1/webhooks', { url: receiverUrl, events: ['*'] })
          : undefined;
      for (let call = 0; call < perBlock; call += 1) samples[mode].push(await exec());
      if (endpoint) await api('DELETE', `/v1/webhooks/${endpoint.id}`);
    }
  }
  const p50 = (mode: 'off' | 'on') => quantile(samples[mode], 0.5);
  const p99 = (mode: 'off' | 'on') => quantile(samples[mode], 0.99);
  process.stdout.write(
    `exec true round trip, ${samples.off.length} calls each, interleaved\n` +
      `  no endpoint:  p50 ${p50('off').toFixed(1)} ms  p99 ${p99('off').toFixed(1)} ms\n` +
      `  one endpoint: p50 ${p50('on').toFixed(1)} ms  p99 ${p99('on').toFixed(1)} ms  (${received} events received)\n` +
      `  overhead at p50: ${(((p50('on') - p50('off')) / p50('off')) * 100).toFixed(1)} %\n`,
  );
  await api('DELETE', `/v1/sessions/${session.id}`);
} finally {
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
  receiver.close();
  rmSync(dataDir, { recursive: true, force: true });
}
