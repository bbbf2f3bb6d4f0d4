/**
 * A Vercel AI SDK agent on Airlock, with a scripted model (no network).
 * The contract forbids rm and holds tar for approval: the agent writes a
 * file (allowed), tries rm (denied: the model reads the policy's reason),
 * then tar (held: the run stops with the AI SDK's approval request; this
 * script, as the human, approves it through the Airlock API and answers the
 * AI SDK's request, and the run continues with tar's output).
 *
 *   AIRLOCK_URL=... AIRLOCK_TOKEN=... npx tsx examples/ai-sdk-agent.ts   # exit 0 when all went as expected
 */
import { readFileSync } from 'node:fs';
import { generateText, stepCountIs, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { Sandbox } from '@airlock/sdk';
import { airlockTools } from '@airlock/sdk/ai';

const contract = JSON.parse(readFileSync(new URL('./contracts/no-rm-approve-tar.json', import.meta.url), 'utf8')) as unknown;
const sandbox = await Sandbox.create({ contract });
console.log(`session ${sandbox.id}`);

// The model's turns, in order: three tool calls, then a final answer.
const turns: [string, Record<string, unknown>][] = [
  ['write', { path: 'notes/todo.txt', content: 'ship it\n' }],
  ['bash', { command: 'rm -rf /workspace/notes' }],
  ['bash', { command: 'tar cf /tmp/notes.tar -C /workspace notes && echo archived' }],
];
let turn = 0;
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const model = new MockLanguageModelV3({
  doGenerate: async () => {
    const next = turns[turn];
    turn += 1;
    if (!next) return { content: [{ type: 'text', text: 'Notes written and archived.' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
    return { content: [{ type: 'tool-call', toolCallId: `call-${turn}`, toolName: next[0], input: JSON.stringify(next[1]) }], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] };
  },
});

const tools = airlockTools(sandbox);
const messages: ModelMessage[] = [{ role: 'user', content: 'Write a todo note, clean up, then archive the notes.' }];
let ok = true;
const expect = (condition: boolean, what: string) => {
  console.log(`${condition ? 'ok  ' : 'FAIL'} ${what}`);
  ok &&= condition;
};

try {
  const first = await generateText({ model, tools, messages, stopWhen: stepCountIs(10) });
  const parts = first.steps.flatMap((step) => step.content);
  for (const part of parts) {
    if (part.type === 'tool-result') console.log(`tool ${part.toolName}: ${JSON.stringify(part.output)}`);
    if (part.type === 'tool-error') console.log(`tool ${part.toolName} refused: ${String((part.error as Error).message).split('\n')[0]}`);
  }
  const denied = parts.find((part) => part.type === 'tool-error');
  expect(denied !== undefined && /POLICY_DENIED/.test(String((denied.error as Error).message)) && /rm/.test(String((denied.error as Error).message)), 'rm was denied with the policy reason');
  const request = first.content.find((part) => part.type === 'tool-approval-request');
  expect(request !== undefined, 'tar stopped the run with an approval request');
  if (!request) throw new Error('no approval request');

  // The human: look at what Airlock holds, approve it through the API, and tell the AI SDK.
  const [held] = await sandbox.approvals.list();
  console.log(`airlock holds ${held?.id}: ${held?.reason}`);
  if (held) await sandbox.approvals.approve(held.id, { by: 'example-human', reason: 'archiving notes is fine' });
  messages.push(...first.response.messages, { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request.approvalId, approved: true }] });

  const second = await generateText({ model, tools, messages, stopWhen: stepCountIs(10) });
  // The approved call's result opens the continued run's messages.
  const toolMessages = JSON.stringify(second.response.messages.filter((message) => message.role === 'tool'));
  console.log(`tool bash (approved): ${/"stdout":"([^"]*)"/.exec(toolMessages)?.[1] ?? '?'}`);
  expect(toolMessages.includes('archived'), 'the approved tar ran and its output reached the model');
  expect(second.text === 'Notes written and archived.', `the model finished: ${second.text}`);
  const approval = held ? await sandbox.approvals.get(held.id) : undefined;
  expect(approval?.state === 'executed' && approval.decidedBy?.startsWith('token:') === true, `Airlock recorded the approval (${approval?.state}, by ${approval?.decidedBy})`);
} catch (error) {
  console.error(error);
  ok = false;
} finally {
  await sandbox.kill();
}
console.log(ok ? 'ai-sdk-agent: everything went as expected' : 'ai-sdk-agent: something went wrong');
process.exit(ok ? 0 : 1);
