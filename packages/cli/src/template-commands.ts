/** `airlock templates ...`: E2B template names for Airlock images (and contracts), used by the E2B-compatible API. */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { Connection } from '@airlock/sdk';
import { cliConnection } from './connection-options.js';
import { printJson, printTable } from './output.js';

interface TemplateInfo {
  name: string;
  image: string;
  contract: boolean;
}

/** Registers `templates`. */
export function registerTemplateCommands(program: Command): void {
  const templates = program
    .command('templates')
    .description("E2B templates: the names E2B code creates sandboxes from ('base' is the default image and contract)");
  templates
    .command('set <name>')
    .description('name an image, optionally with a contract, as an E2B template (admin)')
    .requiredOption('--image <image>', 'the Airlock image its sandboxes start from')
    .option('--contract <file>', 'the session contract (JSON) of its sandboxes')
    .option('--json', 'print JSON')
    .action(async (name: string, options: { image: string; contract?: string; json?: boolean }) => {
      const contract = options.contract === undefined ? undefined : (JSON.parse(readFileSync(options.contract, 'utf8')) as unknown);
      const body = { image: options.image, ...(contract === undefined ? {} : { contract }) };
      const set = (await new Connection(cliConnection()).json<TemplateInfo>('PUT', `/v1/e2b/templates/${encodeURIComponent(name)}`, body)).body;
      if (options.json) return printJson(set);
      process.stdout.write(`template ${set.name}: image ${set.image}${set.contract ? ' with its contract' : ''}\n`);
    });
  templates
    .command('ls')
    .description('list the templates')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }) => {
      const listed = (await new Connection(cliConnection()).json<{ templates: TemplateInfo[] }>('GET', '/v1/e2b/templates')).body.templates;
      if (options.json) return printJson(listed);
      printTable(
        ['NAME', 'IMAGE', 'CONTRACT'],
        listed.map((template) => [template.name, template.image, template.contract ? 'yes' : 'default']),
      );
    });
  templates
    .command('rm <name>')
    .description('remove a template (admin)')
    .action(async (name: string) => {
      await new Connection(cliConnection()).json('DELETE', `/v1/e2b/templates/${encodeURIComponent(name)}`);
      process.stdout.write(`template ${name} removed\n`);
    });
}
