/**
 * The `computer` MCP tool against a desktop session on gVisor, called the way
 * an agent written for the providers' computer-use tool calls it: a
 * screenshot comes back as an image, `left_click` with `coordinate` clicks,
 * `type` with `text` types, `key` presses, and each action answers with the
 * screen after it. A policy refusal is a tool error, as for every tool.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Sandbox } from '@airlock/sdk';
import { ensureTestDesktopImage } from '@airlock/cli/dist/test/support/test-installation.js';
import { decodePng, type ScreenPixels } from '@airlock/runtime';
import { AIRLOCK_BIN, TestInstallation, definedEnv, textOf, waitFor } from '../support/mcp-test-kit.js';

/** A button filling the left half (title "Clicked") and a text field on the right (title "Typed:<value>"). */
const PAGE = `<!doctype html><title>Computer</title><body style="margin:0">
<button style="position:fixed;left:0;top:0;width:50vw;height:100vh;border:0;background:#ff0000" onclick="document.title='Clicked'"></button>
<input style="position:fixed;left:60vw;top:40vh;width:30vw;height:10vh;font-size:30px;border:0;background:#00ff00" oninput="document.title='Typed:'+this.value">
</body>`;

const POLICIES = [
  'permit(principal, action, resource);',
  { id: 'no-typing-passwords', text: 'forbid(principal, action == Airlock::Action::"desktop.act", resource) when { context.desktopAction == "type" && context.text like "*password*" };' },
];

type Content = { type: string; text?: string; data?: string; mimeType?: string }[];

describe('the computer tool over MCP (desktop session)', { timeout: 600_000 }, () => {
  let installation: TestInstallation;
  let sandbox: Sandbox;
  let client: Client;

  const title = async () => (await sandbox.commands.run(['xdotool', 'getactivewindow', 'getwindowname'])).stdout.trim();
  const computer = async (args: Record<string, unknown>) => (await client.callTool({ name: 'computer', arguments: args })) as { content: Content; isError?: boolean; structuredContent?: Record<string, unknown> };

  before(async () => {
    await ensureTestDesktopImage();
    installation = await TestInstallation.start();
    sandbox = await Sandbox.create({ url: installation.url, token: installation.token, image: 'debian-bookworm-desktop', contract: { version: 1, resources: { memoryMb: 1536 }, policies: POLICIES } });
    await sandbox.files.write('/workspace/computer.html', PAGE);
    await sandbox.commands.run(['airlock-browser', 'file:///workspace/computer.html']);
    await waitFor(async () => ((await title()).startsWith('Computer') ? true : undefined), 'the page', 60_000);
    const transport = new StdioClientTransport({ command: process.execPath, args: [AIRLOCK_BIN, 'mcp', '--session', sandbox.id], env: definedEnv(installation.env), stderr: 'ignore' });
    client = new Client({ name: 'computer-use-agent', version: '1.0.0' });
    await client.connect(transport);
  });

  after(async () => {
    await client?.close();
    await installation?.destroy();
  });

  it('is offered on a desktop session, in the computer-use shape', async () => {
    const { tools } = await client.listTools();
    const tool = tools.find((candidate) => candidate.name === 'computer');
    assert.ok(tool, `tools: ${tools.map((candidate) => candidate.name).join(', ')}`);
    assert.deepEqual(tool.inputSchema.required, ['action']);
  });

  it('answers screenshot with the screen as a PNG image', async () => {
    const result = await computer({ action: 'screenshot' });
    const image = result.content.find((part) => part.type === 'image');
    assert.equal(image?.mimeType, 'image/png');
    assert.deepEqual([...Buffer.from(image?.data ?? '', 'base64').subarray(1, 4)], [0x50, 0x4e, 0x47]);
    assert.deepEqual(result.structuredContent, { width: 1280, height: 800 });
  });

  it('clicks with left_click at coordinate, types with type and text, and shows the screen after each', async () => {
    const click = await computer({ action: 'left_click', coordinate: [200, 400] });
    assert.equal(click.isError, undefined, textOf(click));
    assert.match(textOf(click), /left_click done; the pointer is at \(200, 400\)/);
    assert.ok(click.content.some((part) => part.type === 'image'), 'a screenshot after the action');
    await waitFor(async () => ((await title()).startsWith('Clicked') ? true : undefined), 'the click');

    // The field is found on the screenshot the click answered with, as an agent would find it.
    const field = centreOfGreen(decodePng(Buffer.from(click.content.find((part) => part.type === 'image')?.data ?? '', 'base64')));
    await computer({ action: 'left_click', coordinate: [field.x, field.y] });
    const typed = await computer({ action: 'type', text: 'mcp' });
    assert.equal(typed.isError, undefined, textOf(typed));
    await waitFor(async () => ((await title()).startsWith('Typed:mcp') ? true : undefined), 'the typing');
    await computer({ action: 'key', text: 'BackSpace' });
    await waitFor(async () => ((await title()).startsWith('Typed:mc -') ? true : undefined), 'the key');
    const where = await computer({ action: 'cursor_position' });
    assert.equal(textOf(where), `X=${field.x},Y=${field.y}`);
  });

  it('returns a denied action as a tool error with the policy, and nothing is typed', async () => {
    const denied = await computer({ action: 'type', text: 'my password' });
    assert.equal(denied.isError, true);
    assert.match(textOf(denied), /^POLICY_DENIED/);
    assert.match(textOf(denied), /no-typing-passwords/);
    assert.match(await title(), /^Typed:mc -/);
  });
});

/** The centre of the pure green pixels of a screen. */
function centreOfGreen(screen: ScreenPixels): { x: number; y: number } {
  let [left, top, right, bottom] = [Infinity, Infinity, -1, -1];
  for (let y = 0; y < screen.height; y++) {
    for (let x = 0; x < screen.width; x++) {
      const index = (y * screen.width + x) * 3;
      if ((screen.rgb[index] as number) > 16 || (screen.rgb[index + 1] as number) < 240 || (screen.rgb[index + 2] as number) > 16) continue;
      [left, top, right, bottom] = [Math.min(left, x), Math.min(top, y), Math.max(right, x), Math.max(bottom, y)];
    }
  }
  assert.ok(right >= 0, 'the green field is on the screen');
  return { x: Math.round((left + right) / 2), y: Math.round((top + bottom) / 2) };
}
