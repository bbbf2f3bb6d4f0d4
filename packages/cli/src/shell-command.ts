/**
 * `airlock shell ID`: a takeover terminal in the session's machine (the SDK's
 * `sandbox.pty`). On a terminal it runs raw (every key goes to the shell,
 * Ctrl-C included) and follows the window's size; with piped input it sends
 * the input and then an end of file, so `echo 'echo hi; exit 3' | airlock
 * shell ID` prints `hi` and exits 3. While it is open the agent's calls on
 * the session wait (reason TAKEOVER); the session is recorded and audited.
 */
import type { Command } from 'commander';
import { WebSocket } from 'ws';
import { Sandbox, type WebSocketConstructor } from '@airlock/sdk';
import { cliConnection } from './connection-options.js';

/** End of file, as a terminal's line discipline reads it (Ctrl-D). */
const END_OF_FILE = '\x04';

/** Registers `shell`. */
export function registerShellCommand(program: Command): void {
  program
    .command('shell <id>')
    .description("open a shell in the session's machine (a recorded takeover: the agent's calls wait until it ends); exits with the shell's exit code")
    .action(async (id: string) => {
      const sandbox = await Sandbox.connect(id, { ...cliConnection(), WebSocket: WebSocket as unknown as WebSocketConstructor });
      const interactive = process.stdin.isTTY === true;
      const size = () => ({ rows: process.stdout.rows || 24, cols: process.stdout.columns || 80 });
      const terminal = await sandbox.pty.open({ ...(process.stdout.isTTY ? size() : {}), client: 'cli' });
      terminal.onData((bytes) => process.stdout.write(bytes));
      const onResize = () => {
        const { rows, cols } = size();
        terminal.resize(rows, cols);
      };
      const onInput = (chunk: Buffer) => terminal.write(chunk);
      const onEnd = () => terminal.write(END_OF_FILE);
      if (interactive) {
        process.stdin.setRawMode(true);
        process.on('SIGWINCH', onResize);
      } else {
        process.stdin.once('end', onEnd);
      }
      process.stdin.on('data', onInput);
      try {
        process.exitCode = await terminal.exited;
      } finally {
        process.stdin.off('data', onInput);
        process.stdin.off('end', onEnd);
        process.off('SIGWINCH', onResize);
        if (interactive) process.stdin.setRawMode(false);
        process.stdin.pause();
        process.stdin.unref?.();
      }
    });
}
