import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { GvisorDriver } from '../packages/runtime/src/drivers/gvisor/index.js';
import { LoopDisks } from '../packages/runtime/src/storage/loop-disks.js';
import { buildBusyboxRootfs } from '../packages/runtime/test/support/busybox-rootfs.js';
const work = mkdtempSync('/var/tmp/airlock-repro-');
await buildBusyboxRootfs(join(work, 'rootfs'));
const disks = new LoopDisks({ root: join(work, 'disks') });
const driver = new GvisorDriver({ stateRoot: join(work, 'state') });
const diskDir = await disks.create('s', 256);
const spec = (id: string) => ({ sandboxId: id, sessionId: 's', rootfsDir: join(work, 'rootfs'), diskDir, stateDir: join(work, 'state', 'sandboxes', id), hostname: 'x', resources: { cpus: 1, memoryMb: 256, maxProcesses: 64, diskMb: 256 }, env: {} });
const sh = async (h: any, s: string) => { let o = ''; const r = await driver.exec(h, { argv: ['sh', '-c', s], cwd: '/', env: {}, timeoutMs: 10000, onStdout: (c) => (o += c), onStderr: (c) => (o += c) }); return `${r.exitCode}: ${o}`; };
let h: any = await driver.start(spec('r1'));
let r: any;
try {
  const d = await driver.exec(h, { argv: ['sh', '-c', 'i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.2; done'], cwd: '/', env: {}, timeoutMs: 10000, detach: { logPath: '/tmp/airlock/x.log' } });
  console.log('detached', d);
  console.log(await sh(h, `kill -0 ${d.pid} && cat /tmp/count`));
  await driver.pause(h); await driver.unpause(h);
  console.log('after thaw', await sh(h, `kill -0 ${d.pid} && cat /tmp/count`));
  await driver.pause(h); await driver.unpause(h);
  mkdirSync(join(work, 'img'));
  await driver.checkpoint(h, join(work, 'img', 'i'), { leaveRunning: false });
  r = await driver.restore(spec('r2'), join(work, 'img', 'i'));
  console.log('after restore', await sh(r, `kill -0 ${d.pid} && cat /tmp/count`));
} catch (e) { console.log('ERROR', e); console.log(readFileSync(join(work, 'state', 'sandboxes', 'r2', 'sandbox.log'), 'utf8').slice(-2000)); }
finally { if (r) await driver.destroy(r); await driver.destroy(h); await disks.destroy('s'); rmSync(work, { recursive: true, force: true }); }
