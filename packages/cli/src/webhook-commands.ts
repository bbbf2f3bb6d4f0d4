/** `airlock webhooks ...`: lifecycle webhook endpoints, signed per Standard Webhooks (admin only). */
import type { Command } from 'commander';
import { Connection, Webhooks } from '@airlock/sdk';
import { cliConnection } from './connection-options.js';
import { printJson, printTable } from './output.js';

function webhooks(): Webhooks {
  return new Webhooks(new Connection(cliConnection()));
}

/** Registers `webhooks`. */
export function registerWebhookCommands(program: Command): void {
  const command = program
    .command('webhooks')
    .description(
      'lifecycle webhooks: session state changes with their reason, approvals, takeovers, snapshots, POSTed signed (Standard Webhooks) to a URL; admin only',
    );
  command
    .command('add <url>')
    .description('register an endpoint; its whsec_ signing secret is printed once')
    .requiredOption('--events <patterns>', "comma-separated event names or patterns, e.g. 'session.*,approval.*' or '*'")
    .option('--tenant <name>', "only this tenant's events (default: every tenant's)")
    .option('--json', 'print JSON: {"id", "secret", ...}')
    .action(async (url: string, options: { events: string; tenant?: string; json?: boolean }) => {
      const events = options.events
        .split(',')
        .map((pattern) => pattern.trim())
        .filter(Boolean);
      const created = await webhooks().create({ url, events, ...(options.tenant === undefined ? {} : { tenant: options.tenant }) });
      if (options.json) return printJson(created);
      process.stdout.write(`${created.id} → ${created.url} (${created.events.join(', ')}): ${created.secret}\nkeep the secret now: it is not shown again\n`);
    });
  command
    .command('ls')
    .description('list endpoints (never their secrets), with deliveries by state')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }) => {
      const all = await webhooks().list();
      if (options.json) return printJson(all);
      printTable(
        ['ID', 'URL', 'EVENTS', 'TENANT', 'STATE', 'PENDING', 'DELIVERED', 'FAILED'],
        all.map((endpoint) => [
          endpoint.id,
          endpoint.url,
          endpoint.events.join(','),
          endpoint.tenant ?? '*',
          endpoint.state === 'disabled' ? `disabled: ${endpoint.disabledReason ?? ''}` : endpoint.state,
          String(endpoint.deliveries?.['pending'] ?? 0),
          String(endpoint.deliveries?.['delivered'] ?? 0),
          String(endpoint.deliveries?.['failed'] ?? 0),
        ]),
      );
    });
  command
    .command('rm <id>')
    .description('remove an endpoint and its pending deliveries')
    .option('--json', 'print JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      const removed = await webhooks().remove(id);
      if (options.json) return printJson(removed);
      process.stdout.write(`${removed.id} removed\n`);
    });
  command
    .command('test <id>')
    .description('send a signed webhook.test event now; exits 1 unless the endpoint answers 2xx')
    .option('--json', 'print JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      const result = await webhooks().test(id);
      if (options.json) printJson(result);
      else process.stdout.write(result.ok ? `delivered (${result.status})\n` : `not delivered: ${result.error}\n`);
      if (!result.ok) process.exitCode = 1;
    });
}
