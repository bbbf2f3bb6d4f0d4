/** The `airlock` command. */
import { Command, CommanderError } from 'commander';
import { registerHostCommands } from './host-commands.js';
import { registerSessionCommands } from './session-commands.js';
import { registerExecCommand } from './exec-command.js';
import { registerShellCommand } from './shell-command.js';
import { registerFilesCommands } from './files-commands.js';
import { registerApprovalCommands } from './approval-commands.js';
import { registerMcpCommand } from './mcp-command.js';
import { registerMachineCommands } from './machine-commands.js';
import { registerSnapshotCommands } from './snapshot-commands.js';
import { registerEgressCommands } from './egress-commands.js';
import { registerNodeCommands } from './node-commands.js';
import { registerTokenCommands } from './token-commands.js';
import { registerWebhookCommands } from './webhook-commands.js';
import { registerTemplateCommands } from './template-commands.js';
import { EXIT_USAGE, reportError } from './output.js';

const program = new Command('airlock')
  .description('Airlock: an isolated, persistent, resumable machine per agent session; every tool call authorized first.\nReads AIRLOCK_URL and AIRLOCK_TOKEN.')
  .exitOverride()
  .showHelpAfterError('(run `airlock --help` for usage)');

registerHostCommands(program);
registerSessionCommands(program);
registerExecCommand(program);
registerShellCommand(program);
registerFilesCommands(program);
registerApprovalCommands(program);
registerEgressCommands(program);
registerMcpCommand(program);
registerMachineCommands(program);
registerSnapshotCommands(program);
registerNodeCommands(program);
registerTokenCommands(program);
registerWebhookCommands(program);
registerTemplateCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? 0 : EXIT_USAGE;
  } else {
    process.exitCode = reportError(error);
  }
}
