/**
 * Commands on a session machine beyond its lifecycle: `sessions resize`,
 * `sessions keep-awake`, and `ports expose|ls|rm`.
 */
import type { Command } from 'commander';
import { Sandbox } from '@airlock/sdk';
import { cliConnection } from './connection-options.js';
import { EXIT_USAGE, printJson, printTable } from './output.js';

const UNITS_MB: Record<string, number> = { '': 1, k: 1 / 1024, m: 1, g: 1024, t: 1024 * 1024 };

/** Parses a memory size such as 512M, 1G, 1.5GiB or 768 (MB) into whole megabytes; undefined when it is not one. */
export function parseMemoryMb(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/i.exec(text.trim());
  if (!match) return undefined;
  const mb = Number(match[1]) * (UNITS_MB[(match[2] ?? '').toLowerCase()] ?? Number.NaN);
  return Number.isFinite(mb) && mb > 0 ? Math.round(mb) : undefined;
}

function usage(message: string): void {
  process.stderr.write(`airlock: ${message}\n`);
  process.exitCode = EXIT_USAGE;
}

/** Registers `sessions resize`, `sessions keep-awake` (on the existing `sessions` command) and `ports`. */
export function registerMachineCommands(program: Command): void {
  const sessions = program.commands.find((command) => command.name() === 'sessions');
  if (!sessions) throw new Error('register the sessions commands first');

  sessions
    .command('resize <id>')
    .description('change the CPU and memory limits of the running machine in place (processes and memory kept)')
    .option('--cpus <n>', 'CPU limit, e.g. 2 or 0.5')
    .option('--memory <size>', 'memory limit, e.g. 512M or 1G')
    .option('--json', 'print the session as JSON')
    .action(async (id: string, options: { cpus?: string; memory?: string; json?: boolean }) => {
      const cpus = options.cpus === undefined ? undefined : Number(options.cpus);
      const memoryMb = options.memory === undefined ? undefined : parseMemoryMb(options.memory);
      if (cpus !== undefined && !(cpus > 0)) return usage(`--cpus takes a positive number, got ${JSON.stringify(options.cpus)}`);
      if (options.memory !== undefined && memoryMb === undefined) return usage(`--memory takes a size such as 512M or 1G, got ${JSON.stringify(options.memory)}`);
      if (cpus === undefined && memoryMb === undefined) return usage('give --cpus, --memory or both');
      const sandbox = await Sandbox.connect(id, cliConnection());
      const info = await sandbox.resize({ ...(cpus === undefined ? {} : { cpus }), ...(memoryMb === undefined ? {} : { memoryMb }) });
      if (options.json) return printJson(info);
      const resources = info['resources'] as { cpus: number; memoryMb: number };
      process.stdout.write(`${info.id} cpus=${resources.cpus} memory=${resources.memoryMb}M\n`);
    });

  sessions
    .command('keep-awake <id>')
    .description('keep the machine running when idle (no pause, no suspend); --off lets it sleep again')
    .option('--off', 'let the machine sleep when idle again')
    .option('--json', 'print the session as JSON')
    .action(async (id: string, options: { off?: boolean; json?: boolean }) => {
      const sandbox = await Sandbox.connect(id, cliConnection());
      const info = await sandbox.keepAwake(!options.off);
      if (options.json) return printJson(info);
      process.stdout.write(`${info.id} keep-awake ${options.off ? 'off' : 'on'}\n`);
    });

  const ports = program.command('ports').description('make ports of a session machine reachable through the server');

  ports
    .command('expose <id> <port>')
    .description('expose a port; prints its URL (send the API token as a bearer header)')
    .option('--json', 'print JSON')
    .action(async (id: string, port: string, options: { json?: boolean }) => {
      const number = Number(port);
      if (!Number.isInteger(number) || number < 1 || number > 65535) return usage(`the port must be a whole number from 1 to 65535, got ${JSON.stringify(port)}`);
      const sandbox = await Sandbox.connect(id, cliConnection());
      const exposed = await sandbox.ports.expose(number);
      if (options.json) return printJson(exposed);
      process.stdout.write(`${exposed.url}\n`);
    });

  ports
    .command('ls <id>')
    .description('list the exposed ports of a session')
    .option('--json', 'print JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      const sandbox = await Sandbox.connect(id, cliConnection());
      const list = await sandbox.ports.list();
      if (options.json) return printJson(list);
      printTable(['PORT', 'URL'], list.map((entry) => [String(entry.port), entry.url]));
    });

  ports
    .command('rm <id> <port>')
    .description('stop exposing a port')
    .action(async (id: string, port: string) => {
      const sandbox = await Sandbox.connect(id, cliConnection());
      await sandbox.ports.remove(Number(port));
      process.stdout.write(`${id} ${port} removed\n`);
    });
}
