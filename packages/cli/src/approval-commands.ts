/** `airlock approvals ...` and `airlock audit ...`. */
import type { Command } from 'commander';
import { Approvals, Audit, Connection, Sandbox, type AuditVerification } from '@airlock/sdk';
import { cliConnection } from './connection-options.js';
import { EXIT_FAILURE, EXIT_USAGE, printJson, printTable } from './output.js';

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
    .usage('ID [--json] | verify ID | verify --system | verify --all | export ID | export --system')
    .description(
      'show the audit log of a session; `audit verify ID` checks its chain (exit 1 naming the first bad record or the missing tail); `audit verify --system` checks the system chain (tokens, tenants, secrets); `audit verify --all` checks every chain, and names those the database lost while the head file still lists them (admin); `audit export ID` prints the records and the signed head as JSON lines',
    )
    .option('--json', 'print JSON')
    .option('--system', 'with verify or export: the system chain (token, tenant and secret records) instead of a session (admin)')
    .option('--all', 'with verify: every chain of the server, missing ones included (admin)')
    .action(async (id: string, sessionId: string | undefined, options: { json?: boolean; system?: boolean; all?: boolean }) => {
      if (options.system || options.all) {
        const action = options.all ? (id === 'verify' ? 'verify' : undefined) : id === 'verify' || id === 'export' ? id : undefined;
        if (!action || sessionId !== undefined || (options.system && options.all)) {
          process.stderr.write('airlock: use `audit verify --system`, `audit export --system` or `audit verify --all`, without a session id\n');
          process.exitCode = EXIT_USAGE;
          return;
        }
        const audit = new Audit(new Connection(cliConnection()));
        if (options.all) return verifyAll(audit, Boolean(options.json));
        if (action === 'export') {
          process.stdout.write(await audit.exportSystem());
          return;
        }
        return printVerification(await audit.verifySystem(), Boolean(options.json), 'system chain');
      }
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
  printVerification(await (await Sandbox.connect(id, cliConnection())).verifyAudit(), json, 'chain');
}

function printVerification(result: AuditVerification, json: boolean, chain: string): void {
  if (json) printJson(result);
  else if (result.ok) {
    const anchored =
      result.anchoredSeq === null ? 'no head kept outside the database on this server' : `head kept outside the database at record ${result.anchoredSeq}`;
    process.stdout.write(
      `ok: ${result.records} records, ${chain} intact (${result.authenticity === 'keyed' ? 'keyed' : (result.note ?? result.authenticity)}; ${anchored})\n`,
    );
  } else {
    process.stdout.write(`FAILED at record ${result.problem?.seq}: ${result.problem?.kind}: ${result.problem?.message}\n`);
  }
  if (!result.ok) process.exitCode = EXIT_FAILURE;
}

/** Every chain: one line per failed chain (the system chain named as such), exit 1 when any failed or is missing. */
async function verifyAll(audit: Audit, json: boolean): Promise<void> {
  const report = await audit.verifyAll();
  if (json) printJson(report);
  else if (report.ok) process.stdout.write(`ok: ${report.chains} chains intact\n`);
  else {
    process.stdout.write(`FAILED: ${report.failed.length} of ${report.chains} chains (${report.missing.length} missing from the database)\n`);
    for (const chain of report.failed) {
      const name = chain.sessionId === '' ? 'system chain' : chain.sessionId;
      const state = chain.missing
        ? 'MISSING (the head file outside the database names it; the database has none of it)'
        : `record ${chain.problem?.seq}: ${chain.problem?.kind}`;
      process.stdout.write(`${name}: ${state}: ${chain.problem?.message ?? ''}\n`);
    }
  }
  if (!report.ok) process.exitCode = EXIT_FAILURE;
}
