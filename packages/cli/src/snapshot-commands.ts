/**
 * `airlock snapshots create|ls|get|rm` and `airlock sessions fork`: snapshots
 * as artifacts, and one session (or snapshot) forked into N branches.
 */
import type { Command } from 'commander';
import { Connection, ForkError, Sandbox, Snapshots, type SnapshotInfo } from '@airlock/sdk';
import { cliConnection } from './connection-options.js';
import { EXIT_FAILURE, EXIT_USAGE, printJson, printTable } from './output.js';

function megabytes(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

function printSnapshot(snapshot: SnapshotInfo): void {
  const lines = [
    ['id', snapshot.id],
    ['name', snapshot.name ?? '-'],
    ['session', snapshot.sessionId],
    ['state', snapshot.state],
    ['reason', snapshot.reason],
    ['contents', snapshot.contents.join(' + ')],
    ['parent snapshot', snapshot.parentSnapshotId ?? '-'],
    ['image', `${snapshot.image.name} (${snapshot.image.digest.slice(0, 19)})`],
    ['contract version', String(snapshot.contractVersion)],
    ['size on disk', megabytes(snapshot.sizeBytes)],
    ['checksum', snapshot.checksum],
    ['created', snapshot.createdAt],
    ['expires', snapshot.expiresAt ?? 'never (no retention in the contract)'],
    ['deleted', snapshot.deletedAt ?? '-'],
  ];
  for (const [key, value] of lines) process.stdout.write(`${(key ?? '').padEnd(20)}${value}\n`);
}

/** Registers `snapshots`, and `fork` on the existing `sessions` command. */
export function registerSnapshotCommands(program: Command): void {
  const snapshots = program.command('snapshots').description('snapshots of sessions: memory, processes and disk at one instant');

  snapshots
    .command('create <session>')
    .description('snapshot a running session (it is paused only while memory and disk are saved); prints the snapshot id')
    .option('--name <name>', 'a name to find it by')
    .option('--json', 'print the snapshot as JSON')
    .action(async (sessionId: string, options: { name?: string; json?: boolean }) => {
      const sandbox = await Sandbox.connect(sessionId, cliConnection());
      const snapshot = await sandbox.snapshots.create(options.name === undefined ? {} : { name: options.name });
      if (options.json) printJson(snapshot);
      else process.stdout.write(`${snapshot.id}\n`);
    });

  snapshots
    .command('ls')
    .description('list snapshots (suspend snapshots too)')
    .option('--session <id>', 'only those of this session')
    .option('--all', 'include deleted and expired ones')
    .option('--json', 'print JSON')
    .action(async (options: { session?: string; all?: boolean; json?: boolean }) => {
      const list = await new Snapshots(new Connection(cliConnection()), options.session).list({ all: Boolean(options.all) });
      if (options.json) return printJson(list);
      printTable(
        ['ID', 'NAME', 'SESSION', 'REASON', 'STATE', 'SIZE', 'CREATED', 'EXPIRES'],
        list.map((s) => [s.id, s.name ?? '-', s.sessionId, s.reason, s.state, megabytes(s.sizeBytes), s.createdAt, s.expiresAt ?? '-']),
      );
    });

  snapshots
    .command('get <id>')
    .description('show a snapshot')
    .option('--json', 'print JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      const snapshot = await new Snapshots(new Connection(cliConnection())).get(id);
      if (options.json) printJson(snapshot);
      else printSnapshot(snapshot);
    });

  snapshots
    .command('rm <id>')
    .description("delete a snapshot's bytes (its record stays)")
    .option('--json', 'print JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      const snapshot = await new Snapshots(new Connection(cliConnection())).remove(id);
      if (options.json) printJson(snapshot);
      else process.stdout.write(`${snapshot.id} ${snapshot.state}\n`);
    });

  const sessions = program.commands.find((command) => command.name() === 'sessions');
  if (!sessions) throw new Error('register the sessions commands first');
  sessions
    .command('fork <id>')
    .description('fork a session (running, paused or suspended), or one of its snapshots, into N independent sessions; prints their ids')
    .requiredOption('--count <n>', 'number of branches')
    .option('--snapshot <id>', 'fork this snapshot of the session instead of the session as it is now')
    .option('--json', 'print the branches as JSON')
    .action(async (id: string, options: { count: string; snapshot?: string; json?: boolean }) => {
      // Only a number is checked here; its range is the server's to say (its maximum is configurable).
      const count = Number(options.count);
      if (options.count.trim() === '' || !Number.isFinite(count)) {
        process.stderr.write(`airlock: --count takes a number, got ${JSON.stringify(options.count)}\n`);
        process.exitCode = EXIT_USAGE;
        return;
      }
      const sandbox = await Sandbox.connect(id, cliConnection());
      let created: Sandbox[];
      let failures: ForkError<Sandbox>['failures'] = [];
      try {
        created = await sandbox.fork({ count, ...(options.snapshot === undefined ? {} : { snapshotId: options.snapshot }) });
      } catch (error) {
        if (!(error instanceof ForkError)) throw error;
        created = (error as ForkError<Sandbox>).created;
        failures = error.failures;
      }
      if (options.json) {
        const branches = [...created.map((branch) => ({ index: branch.info.lineage?.branchIndex ?? -1, ...branch.info })), ...failures];
        printJson(branches.sort((a, b) => a.index - b.index));
      } else {
        for (const branch of created) process.stdout.write(`${branch.id}\n`);
      }
      for (const failure of failures) {
        process.stderr.write(`airlock: branch ${failure.index}${failure.sessionId ? ` (${failure.sessionId})` : ''}: ${failure.error.code}: ${failure.error.message}\n`);
      }
      if (failures.length > 0) process.exitCode = EXIT_FAILURE;
    });
}
