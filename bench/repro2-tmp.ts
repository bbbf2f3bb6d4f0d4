import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '@airlock/runtime';
import { Sandbox } from '@airlock/sdk';
const COUNTER = "import os, time\ni = 0\nwhile True:\n    i += 1\n    open('/tmp/count.tmp', 'w').write(str(i))\n    os.replace('/tmp/count.tmp', '/tmp/count')\n    time.sleep(0.05)";
const work = mkdtempSync('/var/tmp/airlock-repro2-');
const server = await startServer({ dataDir: join(work, 'data'), host: '127.0.0.1', port: 0, token: 't' });
const c = { url: server.url, token: 't' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
try {
  const s = await Sandbox.create({ ...c, contract: { version: 1 }, idleTimeoutSeconds: 2 } as any);
  await s.files.write('/workspace/counter.py', COUNTER);
  const d = await s.commands.detach(['python3', '/workspace/counter.py']);
  console.log('pid', d.pid);
  const read = async () => { const r = await s.commands.run(`kill -0 ${d.pid} && cat /tmp/count`); return `${r.exitCode} ${r.stdout} ${r.stderr}`; };
  await sleep(300); console.log(await read());
  for (let i = 0; i < 50; i++) { const info = await (s as any).refresh?.() ?? null; await sleep(200); }
  console.log('state before read', (await Sandbox.connect(s.id, c)).info?.state);
  console.log(await read());
} catch (e) {
  console.log('ERROR', e);
  const dir = join(work, 'data', 'sandboxes');
  for (const sb of existsSync(dir) ? readdirSync(dir) : []) { const log = join(dir, sb, 'sandbox.log'); if (existsSync(log)) console.log(sb, readFileSync(log, 'utf8').slice(-3000)); }
} finally {
  for (const session of server.services.sessions.list()) if (session.state !== 'terminated') await server.services.sessions.terminate(session.id).catch(() => undefined);
  await server.close(); rmSync(work, { recursive: true, force: true });
}
