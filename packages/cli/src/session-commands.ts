/** `airlock sessions ...`, `airlock exec`, `airlock files ...`: session work over the SDK. */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { Sandbox, type SessionInfo } from '@airlock/sdk';
import { cliConnection } from './connection-options.js';
import { printJson, printTable } from './output.js';

function sessionRow(session: SessionInfo): string[] {
  return [session.id, session.state, session.mode, session.image.name, session.createdAt];
}

function printSession(session: SessionInfo, json: boolean): void {
  if (json) return printJson(session);
  const meters = session.meters;
  const lines = [
    ['id', session.id],
    ['state', session.state],
    ['mode', session.mode],
    ['image', `${session.image.name} (${session.image.digest.slice(0, 19)})`],
    ['tenant / principal', `${session.tenant} / ${session.principal}`],
    ['contract version', String(session.contractVersion)],
    ['sandbox', `${String(session['sandbox'] ?? 'gvisor')} ${session.sandboxId ?? '(no machine now)'}`],
    ['lineage', session.lineage ? `fork #${session.lineage.branchIndex} of ${session.lineage.parentSessionId} at ${session.lineage.snapshotId}` : '-'],
    ['failure', session.failure ? `${session.failure.code}: ${session.failure.message}` : '-'],
    ['breaker', session.guard.tripped ? `tripped after ${session.guard.tripped.count} identical failures` : 'ok'],
    ['tool calls', String(meters['toolCalls'] ?? 0)],
    ['cpu seconds', (meters['cpuSeconds'] ?? 0).toFixed(2)],
    ['peak memory', `${((meters['peakMemoryBytes'] ?? 0) / 1048576).toFixed(1)} MiB`],
    ['running / paused / suspended', `${(meters['runningSeconds'] ?? 0).toFixed(1)} s / ${(meters['pausedSeconds'] ?? 0).toFixed(1)} s / ${(meters['suspendedSeconds'] ?? 0).toFixed(1)} s`],
    ['snapshot bytes', String(meters['snapshotBytes'] ?? 0)],
    ...machineLines(session),
  ];
  for (const [key, value] of lines) process.stdout.write(`${(key ?? '').padEnd(30)}${value}\n`);
}

/** Resources, idle sleep and ports, for machine sessions; per-call time for per-call sessions. */
function machineLines(session: SessionInfo): string[][] {
  const resources = session['resources'] as { cpus: number; memoryMb: number } | undefined;
  const idle = session['idle'] as { pauseAfterSeconds: number; suspendAfterSeconds: number; keepAwake: boolean } | null | undefined;
  const ports = (session['exposedPorts'] as number[] | undefined) ?? [];
  const lines: string[][] = [];
  if (resources) lines.push(['cpus / memory', `${resources.cpus} / ${resources.memoryMb} MB`]);
  if (idle) lines.push(['idle sleep', idle.keepAwake ? 'kept awake' : `pause after ${idle.pauseAfterSeconds} s, suspend after ${idle.suspendAfterSeconds} s`]);
  if (ports.length > 0) lines.push(['exposed ports', ports.join(', ')]);
  if (session.mode === 'per-call') lines.push(['per-call sandbox seconds', (session.meters['perCallSeconds'] ?? 0).toFixed(1)]);
  return lines;
}

/** Registers `sessions`. */
export function registerSessionCommands(program: Command): void {
  const sessions = program.command('sessions').description('create, inspect, suspend, resume and terminate sessions');

  sessions
    .command('create')
    .description('create a session and start its machine; prints its id')
    .option('--image <name>', 'image to start from')
    .option('--contract <file>', 'session contract (JSON or YAML)')
    .option('--mode <mode>', 'machine (default) or per-call')
    .option('--sandbox <driver>', 'gvisor (default) or microvm (a VM with its own guest kernel)')
    .option('--idle-timeout <seconds>', 'suspend the machine after this many idle seconds (it pauses after a quarter of them)', (value) => Number.parseInt(value, 10))
    .option('--json', 'print the session as JSON')
    .action(async (options: { image?: string; contract?: string; mode?: 'machine' | 'per-call'; sandbox?: string; idleTimeout?: number; json?: boolean }) => {
      let contract: unknown;
      if (options.contract) {
        const text = readFileSync(options.contract, 'utf8');
        const { parseContractText } = await import('@airlock/runtime');
        contract = parseContractText(text, 'auto', { baseDir: options.contract.replace(/[^/]*$/, '') || '.' });
      }
      const sandbox = await Sandbox.create({
        ...cliConnection(),
        ...(options.image === undefined ? {} : { image: options.image }),
        ...(contract === undefined ? {} : { contract }),
        ...(options.mode === undefined ? {} : { mode: options.mode }),
        ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }),
        ...(options.idleTimeout === undefined ? {} : { idleTimeoutSeconds: options.idleTimeout }),
      });
      if (options.json) printJson(sandbox.info);
      else process.stdout.write(`${sandbox.id}\n`);
    });

  sessions
    .command('ls')
    .description('list sessions')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }) => {
      const list = await Sandbox.list(cliConnection());
      if (options.json) return printJson(list);
      printTable(['ID', 'STATE', 'MODE', 'IMAGE', 'CREATED'], list.map(sessionRow));
    });

  for (const [name, description] of [
    ['get', 'show a session, its lineage and its meters'],
    ['suspend', 'checkpoint memory and processes; the machine holds no CPU or RAM'],
    ['resume', 'restore the machine where it stopped'],
    ['pause', 'freeze the machine in place (memory kept)'],
    ['restart', 'start a fresh machine on the same disk (a degraded or failed session): files kept, processes lost'],
    ['rm', 'terminate: destroy machine, disk and memory images'],
    ['reset-guard', 'reset the runaway breaker'],
  ] as const) {
    sessions
      .command(`${name} <id>`)
      .description(description)
      .option('--json', 'print JSON')
      .action(async (id: string, options: { json?: boolean }) => {
        const sandbox = await Sandbox.connect(id, cliConnection());
        const info =
          name === 'get' ? sandbox.info
          : name === 'suspend' ? await sandbox.suspend()
          : name === 'resume' ? await sandbox.resume()
          : name === 'pause' ? await sandbox.pause()
          : name === 'restart' ? await sandbox.restart()
          : name === 'rm' ? await sandbox.kill()
          : await sandbox.resetGuard();
        if (name === 'get' || options.json) printSession(info, Boolean(options.json));
        else process.stdout.write(`${info.id} ${info.state}\n`);
      });
  }
}
