/** `airlock secrets ...` and `airlock network set`: credentials for the egress gateway, and a session's egress lists. */
import type { Command } from 'commander';
import { Connection, Secrets, updateSessionNetwork } from '@airlock/sdk';
import { cliConnection } from './connection-options.js';
import { printJson, printTable } from './output.js';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  // One trailing newline is what `echo` adds; it is never part of a token.
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

function list(value: string, previous: string[] = []): string[] {
  return [...previous, ...value.split(',').map((item) => item.trim()).filter(Boolean)];
}

/** Registers `secrets` and `network`. */
export function registerEgressCommands(program: Command): void {
  const secrets = program.command('secrets').description('secrets the egress gateway injects for sessions (values are never shown)');
  secrets
    .command('set <name>')
    .description('store a secret; the value is read from stdin (e.g. printf %s "$TOKEN" | airlock secrets set GITHUB_TOKEN)')
    .option('--tenant <names>', 'give it to these tenants only, comma separated (repeatable); default for a new secret: every tenant; a replaced one keeps its tenants', list)
    .option('--every-tenant', 'give it to every tenant')
    .option('--json', 'print JSON')
    .action(async (name: string, options: { tenant?: string[]; everyTenant?: boolean; json?: boolean }) => {
      const value = await readStdin();
      const tenants = options.everyTenant ? { tenants: null } : options.tenant ? { tenants: options.tenant } : {};
      const info = await new Secrets(new Connection(cliConnection())).set(name, value, tenants);
      if (options.json) printJson(info);
      else process.stdout.write(`${info.name} stored (${info.bytes} bytes, ${info.tenants === null ? 'every tenant' : `tenants ${info.tenants.join(', ')}`})\n`);
    });
  secrets
    .command('ls')
    .description('list secrets (names only)')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }) => {
      const all = await new Secrets(new Connection(cliConnection())).list();
      if (options.json) return printJson(all);
      printTable(['NAME', 'BYTES', 'TENANTS', 'UPDATED'], all.map((info) => [info.name, String(info.bytes), info.tenants === null ? '*' : info.tenants.join(','), info.updatedAt]));
    });
  secrets
    .command('rm <name>')
    .description('delete a secret; sessions bound to it get a clear error on their next request')
    .action(async (name: string) => {
      await new Secrets(new Connection(cliConnection())).remove(name);
      process.stdout.write(`${name} deleted\n`);
    });

  program
    .command('network')
    .description("change a running session's egress lists (a new contract version, applied at once)")
    .command('set <sessionId>')
    .option('--allow <patterns>', 'allowedDomains, comma separated (repeatable)', list)
    .option('--deny <patterns>', 'deniedDomains, comma separated (repeatable)', list)
    .option('--json', 'print JSON')
    .action(async (sessionId: string, options: { allow?: string[]; deny?: string[]; json?: boolean }) => {
      const session = await updateSessionNetwork(new Connection(cliConnection()), sessionId, {
        ...(options.allow ? { allowedDomains: options.allow } : {}),
        ...(options.deny ? { deniedDomains: options.deny } : {}),
      });
      if (options.json) printJson(session);
      else process.stdout.write(`${sessionId} contract version ${String(session['contractVersion'])}\n`);
    });
}
