/**
 * An MCP client on Airlock, with the official MCP client library: it starts
 * `airlock mcp --contract ...` over stdio and plays a scripted agent (no
 * model, no network). The contract forbids rm and holds tar for approval:
 * rm comes back as a tool error with the policy's reason; tar comes back
 * pending with its approval id (this client declares no elicitation; one
 * that does gets a confirmation request instead), this script approves it
 * through the Airlock API as the human would, and await_approval returns
 * tar's output.
 *
 *   AIRLOCK_URL=... AIRLOCK_TOKEN=... npx tsx examples/mcp-client.ts   # exit 0 when all went as expected
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Connection, Approvals } from '@airlock/sdk';

const airlock = fileURLToPath(new URL('../packages/cli/bin/airlock.js', import.meta.url));
const contract = fileURLToPath(new URL('./contracts/no-rm-approve-tar.json', import.meta.url));
const environment = Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined));
const transport = new StdioClientTransport({ command: process.execPath, args: [airlock, 'mcp', '--contract', contract], env: environment, stderr: 'inherit' });
const client = new Client({ name: 'airlock-example', version: '0.1.0' });
const approvals = new Approvals(new Connection());

let ok = true;
const expect = (condition: boolean, what: string) => {
  console.log(`${condition ? 'ok  ' : 'FAIL'} ${what}`);
  ok &&= condition;
};
// The first text block is for the model; a second one holds the structured result as JSON.
const text = (result: Awaited<ReturnType<typeof client.callTool>>) => (result.content as { type: string; text?: string }[]).find((part) => part.type === 'text')?.text ?? '';

try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  console.log(`tools: ${tools.map((tool) => tool.name).join(', ')}`);

  const written = await client.callTool({ name: 'write', arguments: { path: 'notes/todo.txt', content: 'ship it\n' } });
  console.log(`write: ${text(written)}`);

  const denied = await client.callTool({ name: 'bash', arguments: { command: 'rm -rf /workspace/notes' } });
  console.log(`bash rm: ${text(denied).split('\n')[0]}`);
  expect(denied.isError === true && /POLICY_DENIED/.test(text(denied)) && /rm/.test(text(denied)), 'rm was denied with the policy reason');

  const held = await client.callTool({ name: 'bash', arguments: { command: 'tar cf /tmp/notes.tar -C /workspace notes && echo archived' } });
  const approvalId = (held.structuredContent as { approvalId?: string } | undefined)?.approvalId;
  console.log(`bash tar: ${text(held).split('\n')[0]}`);
  expect(approvalId !== undefined, 'tar is held for approval');
  if (!approvalId) throw new Error('no approval id');

  // The human: approve through the Airlock API; the agent then collects the result.
  await approvals.approve(approvalId, { by: 'example-human', reason: 'archiving notes is fine' });
  const result = await client.callTool({ name: 'await_approval', arguments: { approval_id: approvalId, timeout: 60 } });
  console.log(`await_approval: ${text(result).split('\n')[0]}`);
  expect(result.isError !== true && text(result).includes('archived'), 'the approved tar ran and await_approval returned its output');
  const approval = await approvals.get(approvalId);
  expect(approval.state === 'executed' && approval.decidedBy?.startsWith('token:') === true, `Airlock recorded the approval (${approval.state}, by ${approval.decidedBy})`);
} catch (error) {
  console.error(error);
  ok = false;
} finally {
  await client.close(); // the server terminates the session it created
}
console.log(ok ? 'mcp-client: everything went as expected' : 'mcp-client: something went wrong');
process.exit(ok ? 0 : 1);
