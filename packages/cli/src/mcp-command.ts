/** `airlock mcp`: an MCP server on stdio whose tools run on one Airlock session. */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { cliConnection } from './connection-options.js';
import { EXIT_USAGE } from './output.js';

/** Registers `mcp`. */
export function registerMcpCommand(program: Command): void {
  program
    .command('mcp')
    .description(
      'serve MCP on stdio (tools bash, read, write, edit, ls, glob, grep, await_approval), every call through the airlock. ' +
        'With --session, uses that session and leaves it running at exit. Otherwise creates a session for this run ' +
        '(with --contract, or the default contract) and terminates it when the client disconnects, unless --keep-session.',
    )
    .option('--session <id>', 'use this existing session (never terminated by this command)')
    .option('--contract <file>', 'create a session with this contract (JSON or YAML) for this run; terminated at exit')
    .option('--keep-session', 'do not terminate a session this run created')
    .option('--approval-wait <seconds>', 'for clients without elicitation: how long a held call waits for a decision before returning its approval id (default 0)', (value) => Number.parseFloat(value))
    .action(async (options: { session?: string; contract?: string; keepSession?: boolean; approvalWait?: number }) => {
      if (options.session !== undefined && options.contract !== undefined) {
        process.stderr.write('airlock: give --session or --contract, not both (a contract applies to a session created for this run)\n');
        process.exitCode = EXIT_USAGE;
        return;
      }
      if (options.approvalWait !== undefined && !(options.approvalWait >= 0)) {
        process.stderr.write('airlock: --approval-wait takes a number of seconds (0 or more)\n');
        process.exitCode = EXIT_USAGE;
        return;
      }
      let contract: unknown;
      if (options.contract !== undefined) {
        const text = readFileSync(options.contract, 'utf8');
        // Parsed here, like `sessions create`, so that policy files named in the contract resolve next to it.
        const { parseContractText } = await import('@airlock/runtime');
        contract = parseContractText(text, 'auto', { baseDir: options.contract.replace(/[^/]*$/, '') || '.' });
      }
      // Loaded on demand so that the other commands do not pay for the MCP SDK.
      const { runStdioServer } = await import('@airlock/mcp');
      await runStdioServer({
        connection: cliConnection(),
        ...(options.session === undefined ? {} : { sessionId: options.session }),
        ...(contract === undefined ? {} : { contract }),
        ...(options.keepSession ? { keep: true } : {}),
        ...(options.approvalWait === undefined ? {} : { approvalWaitMs: Math.round(options.approvalWait * 1000) }),
      });
      // stdin may still hold the event loop after a signal; everything is cleaned up by now.
      process.exit(process.exitCode ?? 0);
    });
}
