/** `airlock approvals ...` and `airlock audit ...`. */
import type { Command } from 'commander';
import { Approvals, Connection, Sandbox } from '@airlock/sdk';
import { cliConnection } from './connection-options.js';
import { EXIT_FAILURE, printJson, printTable } from './output.js';

function describeCall(call: { tool: string; arguments: Record<string, unknown> }): string {
  const args = call.arguments;
  if (call.tool === 'net.connect') return `net.connect ${String(args['host'])}:${String(args['port'])}`;
  if (call.tool === 'exec') return `exec ${typeof args['command'] === 'string' ? args['command'] : JSON.stringify(args['argv'])}`;
  return `${call.tool} ${String(args['path'] ?? '')}`;
}

/** Registers `approvals` and `audit`. */
export function registerApprovalCommands(program: Command): void {
  const approvals = program.command('approvals').description('decide calls the policy holds for a human');

  approvals
    .command('ls')
    .description('list pending approvals')
    .option('--all', 'include decided ones')
    .option('--json', 'print JSON')
    .action(async (options: { all?: boolean; json?: boolean }) => {
      const list = await new Approvals(new Connection(cliConnection())).list({ all: Boolean(options.all) });
      if (options.json) return printJson(list);
      printTable(['ID', 'SESSION', 'STATE', 'CALL', 'REASON'], list.map((a) => [a.id, a.sessionId, a.state, describeCall(a.call), a.reason]));
    });

  for (const verdict of ['approve', 'deny'] as const) {
    approvals
      .command(`${verdict} <id>`)
      .description(verdict === 'approve' ? 'approve: the call runs once' : 'deny: the call never runs')
      .option('--reason <text>', 'why, recorded in the audit log')
      .option('--json', 'print JSON')
      .action(async (id: string, options: { reason?: string; json?: boolean }) => {
        const client = new Approvals(new Connection(cliConnection()));
        const by = process.env['USER'] ?? 'cli';
        const decided = verdict === 'approve' ? await client.approve(id, { by, ...(options.reason ? { reason: options.reason } : {}) }) : await client.deny(id, { by, ...(options.reason ? { reason: options.reason } : {}) });
        if (options.json) printJson(decided);
        else process.stdout.write(`${decided.id} ${decided.state}\n`);
      });
  }

  program
    .command('audit <id> [sessionId]')
    .usage('ID [--json] | verify ID | export ID')
    .description('show the audit log of a session; `audit verify ID` checks its chain (exit 1 naming the first bad record or the missing tail); `audit export ID` prints the records and the signed head as JSON lines')
    .option('--json', 'print JSON')
    .action(async (id: string, sessionId: string | undefined, options: { json?: boolean }) => {
      if (id === 'verify' && sessionId) return verify(sessionId, Boolean(options.json));
      if (id === 'export' && sessionId) {
        process.stdout.write(await (await Sandbox.connect(sessionId, cliConnection())).exportAudit());
        return;
      }
      const records = await (await Sandbox.connect(id, cliConnection())).audit();
      if (options.json) return printJson(records);
      for (const record of records) {
        const data = record.data;
        const summary = [data['gen_ai.tool.name'], data['decision'], data['policyIds'] ? `[${(data['policyIds'] as string[]).join(',')}]` : undefined, data['exitCode'] !== undefined ? `exit=${String(data['exitCode'])}` : undefined, data['code'], data['reason']]
          .filter((part) => part !== undefined && part !== '')
          .join(' ');
        process.stdout.write(`${String(record.seq).padStart(5)}  ${record.at}  ${record.type.padEnd(28)} ${summary}\n`);
      }
    });
}

async function verify(id: string, json: boolean): Promise<void> {
  const result = await (await Sandbox.connect(id, cliConnection())).verifyAudit();
  if (json) printJson(result);
  else if (result.ok) {
    const anchored = result.anchoredSeq === null ? 'no head kept outside the database on this server' : `head kept outside the database at record ${result.anchoredSeq}`;
    process.stdout.write(`ok: ${result.records} records, chain intact (${result.authenticity === 'keyed' ? 'keyed' : result.note ?? result.authenticity}; ${anchored})\n`);
  } else {
    process.stdout.write(`FAILED at record ${result.problem?.seq}: ${result.problem?.kind}: ${result.problem?.message}\n`);
  }
  if (!result.ok) process.exitCode = EXIT_FAILURE;
}
