/** `airlock nodes ...`: the nodes sharing one store (a cluster, see docs/scale-out.md). */
import type { Command } from 'commander';
import { Connection } from '@airlock/sdk';
import { cliConnection } from './connection-options.js';
import { printJson, printTable } from './output.js';

/** A node as the API shows it. */
interface NodeView {
  id: string;
  address: string;
  state: string;
  sessions: number;
  heartbeatAt: string;
}

/** Registers `nodes ls` and `nodes drain`. */
export function registerNodeCommands(program: Command): void {
  const nodes = program.command('nodes').description('the nodes of a cluster: servers sharing one PostgreSQL store and one bucket');

  nodes
    .command('ls')
    .description('list nodes: address, state (active, draining, left, lost), sessions held, last heartbeat')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }) => {
      const { body } = await new Connection(cliConnection()).json<NodeView[]>('GET', '/v1/nodes');
      if (options.json) return printJson(body);
      if (body.length === 0) {
        process.stdout.write(
          'no nodes: this server is not part of a cluster (start servers with --store postgres://… --objects s3://… --advertise http://HOST:PORT)\n',
        );
        return;
      }
      printTable(
        ['ID', 'ADDRESS', 'STATE', 'SESSIONS', 'HEARTBEAT'],
        body.map((node) => [node.id, node.address, node.state, String(node.sessions), node.heartbeatAt]),
      );
    });

  nodes
    .command('drain <name>')
    .description('drain a node: it suspends its sessions (uploaded to object storage), and each resumes on another node at its next call')
    .option('--json', 'print JSON')
    .action(async (name: string, options: { json?: boolean }) => {
      const { body } = await new Connection(cliConnection()).json<NodeView>('POST', `/v1/nodes/${encodeURIComponent(name)}/drain`);
      if (options.json) return printJson(body);
      process.stdout.write(`${body.id} ${body.state} (${body.sessions} sessions to move)\n`);
    });
}
