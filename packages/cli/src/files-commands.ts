/** `airlock files ...`: file operations on a session, each through the airlock. */
import type { Command } from 'commander';
import { Sandbox } from '@airlock/sdk';
import { cliConnection } from './connection-options.js';
import { printJson, printTable } from './output.js';

async function readStdin(): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}

/** Registers `files`. */
export function registerFilesCommands(program: Command): void {
  const files = program.command('files').description('read, write, list and change files in a session');

  files
    .command('read <id> <path>')
    .description('print a file to stdout')
    .action(async (id: string, path: string) => {
      const sandbox = await Sandbox.connect(id, cliConnection());
      process.stdout.write(await sandbox.files.read(path, { format: 'bytes' }));
    });

  files
    .command('write <id> <path>')
    .description('write stdin to a file (atomically)')
    .action(async (id: string, path: string) => {
      const sandbox = await Sandbox.connect(id, cliConnection());
      const written = await sandbox.files.write(path, await readStdin());
      process.stderr.write(`wrote ${written.bytes} bytes to ${written.path}\n`);
    });

  files
    .command('ls <id> [path]')
    .description('list a directory (default /workspace)')
    .option('--json', 'print JSON')
    .action(async (id: string, path: string | undefined, options: { json?: boolean }) => {
      const sandbox = await Sandbox.connect(id, cliConnection());
      const entries = await sandbox.files.list(path ?? '/workspace');
      if (options.json) return printJson(entries);
      printTable(
        ['MODE', 'SIZE', 'MODIFIED', 'NAME'],
        entries.map((entry) => [entry.mode, String(entry.size), entry.modifiedAt, `${entry.name}${entry.type === 'directory' ? '/' : ''}${entry.target ? ` -> ${entry.target}` : ''}`]),
      );
    });

  files
    .command('stat <id> <path>')
    .description('show type, size, mode and time of a path')
    .action(async (id: string, path: string) => printJson(await (await Sandbox.connect(id, cliConnection())).files.stat(path)));

  files
    .command('rm <id> <path>')
    .description('remove a file (a directory with -r)')
    .option('-r, --recursive', 'remove a directory and its contents')
    .action(async (id: string, path: string, options: { recursive?: boolean }) => {
      await (await Sandbox.connect(id, cliConnection())).files.remove(path, { recursive: Boolean(options.recursive) });
    });

  files
    .command('mkdir <id> <path>')
    .description('create a directory and its parents')
    .action(async (id: string, path: string) => {
      await (await Sandbox.connect(id, cliConnection())).files.makeDir(path);
    });

  files
    .command('edit <id> <path> <old> <new>')
    .description('replace the exact text OLD by NEW (OLD must occur once, or pass --all)')
    .option('--all', 'replace every occurrence')
    .action(async (id: string, path: string, oldText: string, newText: string, options: { all?: boolean }) => {
      const result = await (await Sandbox.connect(id, cliConnection())).files.edit(path, oldText, newText, { replaceAll: Boolean(options.all) });
      process.stderr.write(`${result.replacements} replacement(s)\n`);
    });
}
