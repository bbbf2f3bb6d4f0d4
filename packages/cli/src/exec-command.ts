/** `airlock exec ID -- CMD [ARG...]`: streams output, exits with the command's exit code. */
import type { Command } from 'commander';
import { Sandbox } from '@airlock/sdk';
import { cliConnection } from './connection-options.js';
import { EXIT_FAILURE, EXIT_USAGE } from './output.js';

/** Registers `exec`. */
export function registerExecCommand(program: Command): void {
  program
    .command('exec <id> <command...>')
    .description('run a command in the session (after `--`); waits for approval when the policy asks')
    .option('--timeout <seconds>', 'kill the command after this many seconds', (value) => Number.parseFloat(value))
    .option('--cwd <dir>', 'working directory (default /workspace)')
    .option('--env <name=value...>', 'environment variables')
    .option('--ephemeral', 'run in a fresh sandbox over the session disk')
    .option('--detach', 'start a long-running process on the session machine; prints its pid and returns at once')
    .option('--no-wait', 'do not wait for a human when the policy asks; print the approval id and exit 126')
    .option('--stdin', 'pass this process\'s standard input to the command')
    .action(async (id: string, command: string[], options: { timeout?: number; cwd?: string; env?: string[]; ephemeral?: boolean; detach?: boolean; wait: boolean; stdin?: boolean }) => {
      if (options.timeout !== undefined && !(options.timeout > 0)) {
        process.stderr.write('airlock: --timeout takes a positive number of seconds\n');
        process.exitCode = EXIT_USAGE;
        return;
      }
      const envs: Record<string, string> = {};
      for (const pair of options.env ?? []) {
        const at = pair.indexOf('=');
        if (at <= 0) {
          process.stderr.write(`airlock: --env takes NAME=VALUE, got ${JSON.stringify(pair)}\n`);
          process.exitCode = EXIT_USAGE;
          return;
        }
        envs[pair.slice(0, at)] = pair.slice(at + 1);
      }
      if (options.detach && (options.ephemeral || options.stdin || options.timeout !== undefined)) {
        process.stderr.write('airlock: --detach cannot be combined with --ephemeral, --stdin or --timeout\n');
        process.exitCode = EXIT_USAGE;
        return;
      }
      const stdin = options.stdin ? await readAll(process.stdin) : undefined;
      const sandbox = await Sandbox.connect(id, cliConnection());
      if (options.detach) {
        const started = await sandbox.commands.detach(command, {
          ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
          ...(Object.keys(envs).length === 0 ? {} : { envs }),
        });
        process.stdout.write(`${started.pid}\n`);
        process.stderr.write(`airlock: started pid ${started.pid}; its output goes to ${started.logPath} in the session\n`);
        return;
      }
      const abort = new AbortController();
      process.once('SIGINT', () => abort.abort());
      const result = await sandbox.commands.run(command, {
        onStdoutBytes: (bytes) => process.stdout.write(bytes),
        onStderrBytes: (bytes) => process.stderr.write(bytes),
        signal: abort.signal,
        waitForApproval: options.wait,
        onApprovalRequired: (approvalId) => process.stderr.write(`airlock: waiting for approval ${approvalId} (airlock approvals approve ${approvalId})\n`),
        ...(options.timeout === undefined ? {} : { timeoutMs: Math.round(options.timeout * 1000) }),
        ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
        ...(Object.keys(envs).length === 0 ? {} : { envs }),
        ...(options.ephemeral ? { ephemeral: true } : {}),
        ...(stdin === undefined ? {} : { stdin }),
      });
      if (result.timedOut) process.stderr.write(`airlock: the command ran past its timeout and was killed\n`);
      if (result.stdoutTruncated || result.stderrTruncated) process.stderr.write('airlock: output was truncated in the stored result\n');
      process.exitCode = Number.isInteger(result.exitCode) ? result.exitCode : EXIT_FAILURE;
    });
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}
