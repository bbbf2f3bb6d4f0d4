/**
 * An E2B program, unchanged, on Airlock: the `e2b` package from npm with
 * E2B_API_URL and E2B_SANDBOX_URL pointing at Airlock. Every command and file
 * operation passes the airlock: the `guarded` template's contract denies `rm`
 * (the command ends with exit 126 and the policy's reason) and holds `tar` for
 * a human (approved here by a stand-in reviewer through Airlock's own SDK);
 * the session's audit shows each call.
 *
 *   AIRLOCK_URL=... AIRLOCK_TOKEN=... npx tsx examples/e2b-sdk.ts   # exit 0 when all went as expected
 *
 * With the admin token the example sets up what an operator would once:
 *   npx airlock templates set guarded --image debian-bookworm --contract examples/contracts/no-rm-approve-tar.json
 *   export E2B_API_KEY=$(npx airlock tokens create --tenant acme --e2b --json | jq -r .token)
 *   export E2B_API_URL=$AIRLOCK_URL/e2b E2B_SANDBOX_URL=$AIRLOCK_URL/e2b
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CommandExitError, Sandbox } from 'e2b';
import { Approvals, Connection, Sandbox as AirlockSandbox, Tokens } from '@airlock/sdk';

const checks: string[] = [];
function check(ok: boolean, what: string): void {
  checks.push(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
}

/** The operator's part: a template with the contract, an E2B key, the two variables. */
async function setUp(airlock: Connection): Promise<void> {
  const contract = JSON.parse(readFileSync(fileURLToPath(new URL('./contracts/no-rm-approve-tar.json', import.meta.url)), 'utf8')) as unknown;
  await airlock.json('PUT', '/v1/e2b/templates/guarded', { image: 'debian-bookworm', contract });
  process.env['E2B_API_KEY'] ??= (await new Tokens(airlock).create({ tenant: 'acme', role: 'operator', name: 'e2b-example', e2b: true })).token;
  const base = (process.env['AIRLOCK_URL'] ?? 'http://127.0.0.1:7070').replace(/\/$/, '');
  process.env['E2B_API_URL'] ??= `${base}/e2b`;
  process.env['E2B_SANDBOX_URL'] ??= `${base}/e2b`;
}

/** A stand-in for the human reviewer: approves the held calls of one sandbox. */
function reviewer(airlock: Connection, sandboxId: string): { stop: () => void } {
  let running = true;
  void (async () => {
    while (running) {
      for (const approval of await new Approvals(airlock, sandboxId).list()) {
        console.log(`reviewer: approving ${approval.id} (${approval.call.tool})`);
        await new Approvals(airlock).approve(approval.id, { reason: 'reviewed by the example' });
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  })();
  return { stop: () => (running = false) };
}

async function main(): Promise<void> {
  const airlock = new Connection();
  await setUp(airlock);

  // ---- From here on: ordinary E2B code. ----
  const sandbox = await Sandbox.create('guarded', { metadata: { example: 'e2b-sdk' } });
  console.log(`sandbox ${sandbox.sandboxId}`);
  const review = reviewer(airlock, sandbox.sandboxId);
  try {
    const hello = await sandbox.commands.run('echo hello from $(uname -s)');
    check(hello.stdout === 'hello from Linux\n', 'a command ran and printed its output');

    await sandbox.files.write('report.txt', 'draft 1\n');
    check((await sandbox.files.read('report.txt')) === 'draft 1\n', 'a file went up and came back');

    try {
      await sandbox.commands.run('rm -rf /workspace');
      check(false, 'rm was denied with the policy reason');
    } catch (error) {
      check(error instanceof CommandExitError && error.exitCode === 126 && /POLICY_DENIED/.test(error.stderr), 'rm was denied with the policy reason');
    }

    const tar = await sandbox.commands.run('tar cf /tmp/report.tar -C /workspace report.txt && echo archived', { timeoutMs: 120_000 });
    check(tar.stdout === 'archived\n' && /held for approval apr_/.test(tar.stderr), 'the approved tar ran after a human said yes');
  } finally {
    review.stop();
  }

  // ---- The airlock's record of it, through Airlock's own SDK. ----
  const records = await (await AirlockSandbox.connect(sandbox.sandboxId)).audit();
  for (const record of records.filter((r) => r.type.startsWith('tool-call.') || r.type.startsWith('approval.'))) {
    console.log(`audit #${record.seq} ${record.type} ${String(record.data['gen_ai.tool.name'] ?? '')}`);
  }
  check(
    records.some((r) => r.type === 'tool-call.denied') && records.some((r) => r.type === 'approval.granted'),
    'the audit shows the denial and the approval',
  );
  await sandbox.kill();
  if (checks.some((line) => line.startsWith('FAIL'))) process.exit(1);
  console.log('everything went as expected');
}

await main();
