/**
 * An OpenAI Agents SDK agent on Airlock, with a scripted model (no network).
 * The contract forbids rm and holds tar for approval: the agent writes a
 * file (function tool, allowed), tries rm (denied: the model reads the
 * policy's reason), then tar (held: the run stops with an interruption; this
 * script, as the human, approves it through the Airlock API and with
 * `state.approve`, and the run continues), then uses `shellTool` and
 * `applyPatchTool` backed by AirlockShell and AirlockEditor.
 *
 *   AIRLOCK_URL=... AIRLOCK_TOKEN=... npx tsx examples/openai-agents-agent.ts   # exit 0 when all went as expected
 */
import { readFileSync } from 'node:fs';
import { Agent, Usage, applyPatchTool, run, setTracingDisabled, shellTool, type AgentOutputItem, type Model, type ModelResponse } from '@openai/agents';
import { Sandbox } from '@airlock/sdk';
import { AirlockEditor, AirlockShell, airlockAgentTools } from '@airlock/sdk/openai-agents';

setTracingDisabled(true); // traces would go to OpenAI
const contract = JSON.parse(readFileSync(new URL('./contracts/no-rm-approve-tar.json', import.meta.url), 'utf8')) as unknown;
const sandbox = await Sandbox.create({ contract });
console.log(`session ${sandbox.id}`);

const call = (callId: string, name: string, args: Record<string, unknown>): AgentOutputItem => ({ type: 'function_call', callId, name, arguments: JSON.stringify(args), status: 'completed' });
// The model's turns, in order; the last one answers in text.
const turns: AgentOutputItem[][] = [
  [call('call-1', 'write', { path: 'notes/todo.txt', content: 'ship it\n' })],
  [call('call-2', 'bash', { command: 'rm -rf /workspace/notes', timeout: null })],
  [call('call-3', 'bash', { command: 'tar cf /tmp/notes.tar -C /workspace notes && echo archived', timeout: null })],
  [{ type: 'shell_call', callId: 'call-4', status: 'completed', action: { commands: ['cat /workspace/notes/todo.txt'] } }],
  [{ type: 'apply_patch_call', callId: 'call-5', status: 'completed', operation: { type: 'create_file', path: 'notes/plan.md', diff: '+step one\n+step two\n' } }],
  [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Notes written, archived and planned.' }] }],
];
let turn = 0;
const model: Model = {
  async getResponse(): Promise<ModelResponse> {
    const output = turns[Math.min(turn, turns.length - 1)] ?? [];
    turn += 1;
    return { usage: new Usage(), output };
  },
  getStreamedResponse() {
    throw new Error('the scripted model does not stream');
  },
};

const agent = new Agent({
  name: 'archivist',
  instructions: 'Keep the notes tidy.',
  model,
  tools: [...airlockAgentTools(sandbox), shellTool({ shell: new AirlockShell(sandbox) }), applyPatchTool({ editor: new AirlockEditor(sandbox) })],
});

let ok = true;
const expect = (condition: boolean, what: string) => {
  console.log(`${condition ? 'ok  ' : 'FAIL'} ${what}`);
  ok &&= condition;
};
const outputs = (items: readonly { type: string; rawItem?: unknown; output?: unknown }[]) =>
  items.filter((item) => item.type === 'tool_call_output_item').map((item) => String(typeof item.output === 'string' ? item.output : JSON.stringify(item.output)));

try {
  let result = await run(agent, 'Write a todo note, clean up, then archive the notes.');
  const first = outputs(result.newItems);
  for (const text of first) console.log(`tool output: ${text.split('\n')[0]}`);
  expect(first.some((text) => /POLICY_DENIED/.test(text) && /rm/.test(text)), 'rm was denied with the policy reason');
  const [interruption] = result.interruptions;
  expect(interruption !== undefined && interruption.name === 'bash', 'tar interrupted the run for approval');
  if (!interruption) throw new Error('no interruption');

  // The human: approve what Airlock holds through its API, then in the run state.
  const [held] = await sandbox.approvals.list();
  console.log(`airlock holds ${held?.id}: ${held?.reason}`);
  if (held) await sandbox.approvals.approve(held.id, { by: 'example-human', reason: 'archiving notes is fine' });
  result.state.approve(interruption);
  result = await run(agent, result.state);

  const second = outputs(result.newItems);
  for (const text of second) console.log(`tool output: ${text.split('\n')[0]}`);
  expect(second.some((text) => text.includes('archived')), 'the approved tar ran and its output reached the model');
  expect(second.some((text) => text.includes('ship it')), 'the shell tool ran through AirlockShell');
  expect((await sandbox.files.read('/workspace/notes/plan.md')).trimEnd() === 'step one\nstep two', 'apply_patch created notes/plan.md through AirlockEditor');
  expect(result.finalOutput === 'Notes written, archived and planned.', `the model finished: ${String(result.finalOutput)}`);
  const approval = held ? await sandbox.approvals.get(held.id) : undefined;
  expect(approval?.state === 'executed' && approval.decidedBy?.startsWith('token:') === true, `Airlock recorded the approval (${approval?.state}, by ${approval?.decidedBy})`);
} catch (error) {
  console.error(error);
  ok = false;
} finally {
  await sandbox.kill();
}
console.log(ok ? 'openai-agents-agent: everything went as expected' : 'openai-agents-agent: something went wrong');
process.exit(ok ? 0 : 1);
