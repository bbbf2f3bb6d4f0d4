import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '@airlock/runtime';
import { Sandbox } from '@airlock/sdk';
import { quantile, timed } from './stats.js';
const work = mkdtempSync('/var/tmp/airlock-bench-');
const server = await startServer({ dataDir: join(work, 'data'), host: '127.0.0.1', port: 0, token: 'bench' });
const connection = { url: server.url, token: 'bench' };
const totals = new Map<string, number[]>();
let current = new Map<string, number>();
function wrap(target: any, name: string, label: string) {
  const original = target[name];
  if (typeof original !== 'function') return;
  target[name] = function (...args: unknown[]) {
    const started = performance.now();
    const result = original.apply(this, args);
    const done = () => current.set(label, (current.get(label) ?? 0) + performance.now() - started);
    if (result && typeof result.then === 'function') return result.finally(done);
    done();
    return result;
  };
}
try {
  const sandbox = await Sandbox.create({ ...connection, image: 'debian-bookworm-desktop', contract: { version: 1, resources: { memoryMb: 1536 } } });
  await sandbox.desktop.screenshot();
  const services = server.services as any;
  for (const name of ['observe', 'act', 'screenshot']) wrap(services.desktop, name, `desktop.${name}`);
  const store = services.store;
  for (const name of Object.getOwnPropertyNames(Object.getPrototypeOf(store))) if (name !== 'constructor') wrap(store, name, `store.${name}`);
  wrap(services.thumbnails, 'put', 'thumbnails.put');
  wrap(services.sessions, 'withMachine', 'sessions.withMachine');
  const driver = services.sessions.drivers.default;
  for (const name of ['usage', 'connect', 'exec', 'status']) wrap(driver, name, `driver.${name}`);
  const pipelineTimes: number[] = [];
  for (let i = 0; i < 15; i++) {
    current = new Map();
    pipelineTimes.push(await timed(() => services.pipeline.submit(sandbox.id, 'desktop.act', { action: 'click', x: 600, y: 400 })));
    for (const [label, ms] of current) totals.set(label, [...(totals.get(label) ?? []), ms]);
  }
  console.log('pipeline click p50', quantile(pipelineTimes, 0.5).toFixed(1));
  for (const [label, values] of [...totals].sort()) console.log(label.padEnd(40), 'p50', quantile(values, 0.5).toFixed(1), 'n/call', (values.length / 15).toFixed(1));
  await sandbox.kill();
} finally {
  for (const info of await Sandbox.list(connection)) if (info.state !== 'terminated') await (await Sandbox.connect(info.id, connection)).kill().catch(() => undefined);
  await server.close();
  rmSync(work, { recursive: true, force: true });
}
