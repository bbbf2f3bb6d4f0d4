/**
 * Issue 24's figure: the exec round trip (`exec true` through the HTTP API on
 * a gVisor machine session) of a server with telemetry on against one with it
 * off, in the same run, calls interleaved one for one:
 *
 * - on: `airlock serve` with tracing (OTEL_EXPORTER_OTLP_ENDPOINT: every call's
 *   execute_tool and apply_guardrail spans exported to a collector on
 *   loopback that parses them) and /metrics scraped every second;
 * - off: `airlock serve` with no OTEL_* variable and nobody scraping.
 *
 * Metrics are recorded by every server (no switch turns their recording off);
 * what differs is tracing and the scrapes. No webhook endpoint: webhooks are
 * not built yet. Prints figures, asserts nothing.
 *
 * Usage: npm run build && npx tsx bench/telemetry-overhead.bench.ts [calls=200]
 * (root; needs runsc and the debian-bookworm image, taken from
 * /var/tmp/airlock-test/images when AIRLOCK_IMAGES_DIR is not set).
 */
import { createServer } from 'node:http';
import { loadavg } from 'node:os';
import { TestInstallation, freePort } from '../packages/cli/dist/test/support/test-installation.js';
import { quantile, timed } from './stats.js';

const calls = Math.max(20, Number.parseInt(process.argv[2] ?? '200', 10));
const WARM_UP = 10;

let exported = 0;
const collector = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk.toString()));
  request.on('end', () => {
    try {
      const payload = JSON.parse(body) as { resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[] };
      for (const resource of payload.resourceSpans ?? []) for (const scope of resource.scopeSpans ?? []) exported += scope.spans?.length ?? 0;
    } catch {
      // counted as nothing
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
const collectorPort = await freePort();
await new Promise<void>((resolve) => collector.listen(collectorPort, '127.0.0.1', resolve));

const on = await TestInstallation.start({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collectorPort}`, OTEL_SERVICE_NAME: 'airlock-bench' } });
const off = await TestInstallation.start({ env: { OTEL_SDK_DISABLED: 'true' } });
let scrapes = 0;
const scraper = setInterval(() => {
  void fetch(`${on.url}/metrics`, { headers: { authorization: `Bearer ${on.token}` } })
    .then(async (response) => {
      await response.text();
      if (response.ok) scrapes += 1;
    })
    .catch(() => undefined);
}, 1000);

/** A session on `installation` and a function that runs `exec true` in it. */
async function execTrue(installation: TestInstallation): Promise<() => Promise<void>> {
  const headers = { authorization: `Bearer ${installation.token}`, 'content-type': 'application/json' };
  const created = await fetch(`${installation.url}/v1/sessions`, { method: 'POST', headers, body: '{}' });
  if (created.status !== 201) throw new Error(`create on ${installation.url}: ${created.status} ${await created.text()}`);
  const { id } = (await created.json()) as { id: string };
  return async () => {
    const response = await fetch(`${installation.url}/v1/sessions/${id}/exec`, { method: 'POST', headers, body: JSON.stringify({ argv: ['true'] }) });
    const outcome = (await response.json()) as { status?: string };
    if (response.status !== 200 || outcome.status !== 'completed') throw new Error(`exec true: ${response.status} ${JSON.stringify(outcome)}`);
  };
}

try {
  const runOn = await execTrue(on);
  const runOff = await execTrue(off);
  for (let i = 0; i < WARM_UP; i += 1) {
    await runOn();
    await runOff();
  }
  const load = loadavg()[0] ?? 0;
  const withTelemetry: number[] = [];
  const without: number[] = [];
  for (let i = 0; i < calls; i += 1) {
    // Alternate which goes first, so neither always follows the other.
    if (i % 2 === 0) {
      withTelemetry.push(await timed(runOn));
      without.push(await timed(runOff));
    } else {
      without.push(await timed(runOff));
      withTelemetry.push(await timed(runOn));
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 6000)); // one more batch (5 s by default) reaches the collector
  const row = (name: string, samples: number[]) =>
    `| ${name} | ${quantile(samples, 0.5).toFixed(2)} | ${quantile(samples, 0.9).toFixed(2)} | ${quantile(samples, 0.99).toFixed(2)} |`;
  const overhead = (q: number) => ((quantile(withTelemetry, q) / quantile(without, q) - 1) * 100).toFixed(1);
  // Pairs ran back to back, so their difference cancels most of the load's drift.
  const paired = quantile(
    withTelemetry.map((sample, i) => sample - (without[i] ?? sample)),
    0.5,
  );
  process.stdout.write(
    [
      `### Telemetry overhead: exec true through the API, ${calls} calls each, interleaved (load ${load.toFixed(2)} before)`,
      '',
      '| server | p50 (ms) | p90 (ms) | p99 (ms) |',
      '|---|---|---|---|',
      row('tracing (OTLP to loopback) + /metrics scraped every 1 s', withTelemetry),
      row('tracing off, no scrapes', without),
      '',
      `overhead: p50 ${overhead(0.5)} %, p90 ${overhead(0.9)} %; median paired difference ${paired.toFixed(2)} ms (${((paired / quantile(without, 0.5)) * 100).toFixed(1)} % of the p50 off); spans exported ${exported}, scrapes ${scrapes}`,
      '',
    ].join('\n'),
  );
} finally {
  clearInterval(scraper);
  await on.destroy();
  await off.destroy();
  collector.close();
}
