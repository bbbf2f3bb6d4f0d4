/**
 * Issue 18 end to end, on gVisor: a desktop session (debian-bookworm-desktop)
 * with Chromium on a local page whose title tells what happened. Every click
 * and keystroke goes through the airlock: coordinates come from the
 * screenshot, titles are read back with xdotool, Cedar denies typing into a
 * "Secret" window and holds clicks on an "Approve me" window, the page
 * survives suspend and resume, and two fork branches click different buttons.
 * The live view (VNC over a WebSocket) is view-only until a takeover, which
 * makes the agent's actions wait and is recorded.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { WebSocket } from 'ws';
import { ApprovalPendingError, PolicyDeniedError, Sandbox } from '@airlock/sdk';
import { decodePng, type ScreenPixels } from '@airlock/runtime';
import { TestInstallation, ensureTestDesktopImage } from '../support/test-installation.js';

/** Red and blue buttons side by side, a green text field above them; the title says what happened. */
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>page</title>
<style>body{margin:0;height:100vh}#field{position:fixed;left:5vw;top:5vh;width:60vw;height:12vh;background:#00ff00;font-size:40px;border:0}
#a,#b{position:fixed;top:40vh;width:40vw;height:50vh;border:0}#a{left:5vw;background:#ff0000}#b{left:55vw;background:#0000ff}</style></head>
<body><input id="field" autocomplete="off"><button id="a"></button><button id="b"></button>
<script>
const start = new URLSearchParams(location.search).get('t') || 'page';
document.title = start;
document.getElementById('a').onclick = () => { document.title = 'Clicked A'; };
document.getElementById('b').onclick = () => { document.title = 'Clicked B'; };
document.getElementById('field').oninput = (event) => { document.title = 'Typed:' + event.target.value; };
</script></body></html>`;

const POLICIES = [
  'permit(principal, action, resource);',
  {
    id: 'no-typing-into-secrets',
    text: 'forbid(principal, action == Airlock::Action::"desktop.act", resource) when { context.desktopAction == "type" && context.windowTitle like "*Secret*" };',
  },
  {
    id: 'clicks-on-approve-need-a-human',
    text: '@approval("required") permit(principal, action == Airlock::Action::"desktop.act", resource) when { context.desktopAction == "click" && context.windowTitle like "Approve me*" };',
  },
];

const RED = [255, 0, 0] as const;
const BLUE = [0, 0, 255] as const;
const GREEN = [0, 255, 0] as const;

/** Where the pixels of one colour are on the screen (right < 0: nowhere). */
function boundsOf(screen: ScreenPixels, colour: readonly [number, number, number]): { left: number; top: number; right: number; bottom: number } {
  let [left, top, right, bottom] = [Infinity, Infinity, -1, -1];
  for (let y = 0; y < screen.height; y++) {
    for (let x = 0; x < screen.width; x++) {
      const index = (y * screen.width + x) * 3;
      const close = [0, 1, 2].every((channel) => Math.abs((screen.rgb[index + channel] as number) - colour[channel]!) <= 8);
      if (!close) continue;
      left = Math.min(left, x);
      right = Math.max(right, x);
      top = Math.min(top, y);
      bottom = Math.max(bottom, y);
    }
  }
  return { left, top, right, bottom };
}

/** The centre of the pixels of one colour (the test finds buttons as an agent would: on the screenshot). */
function centreOf(screen: ScreenPixels, colour: readonly [number, number, number]): { x: number; y: number } {
  const { left, top, right, bottom } = boundsOf(screen, colour);
  assert.ok(right >= 0, `no ${colour.join(',')} pixels on the screen`);
  return { x: Math.round((left + right) / 2), y: Math.round((top + bottom) / 2) };
}

/** The focused window's title, read inside the machine with xdotool. */
async function windowTitle(sandbox: Sandbox): Promise<string> {
  const result = await sandbox.commands.run(['xdotool', 'getactivewindow', 'getwindowname']);
  return result.exitCode === 0 ? result.stdout.trim() : '';
}

async function waitForTitle(sandbox: Sandbox, expected: string): Promise<string> {
  let seen = '';
  for (let attempt = 0; attempt < 150; attempt++) {
    seen = await windowTitle(sandbox);
    if (seen.startsWith(expected)) return seen;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  assert.fail(`the focused window's title did not become "${expected}…" (last seen: "${seen}")`);
}

/** Opens the page with a starting title in the session's browser (a new tab once it runs) and waits for it. */
async function openPage(sandbox: Sandbox, title: string): Promise<ScreenPixels> {
  const opened = await sandbox.commands.run(['airlock-browser', `file:///workspace/page.html?t=${encodeURIComponent(title)}`]);
  assert.equal(opened.exitCode, 0, opened.stderr);
  await waitForTitle(sandbox, title);
  // The title is set before the page is painted, and a screenshot takes a few milliseconds: wait for the buttons.
  let pixels = await screen(sandbox);
  for (let attempt = 0; attempt < 100 && [RED, BLUE, GREEN].some((colour) => boundsOf(pixels, colour).right < 0); attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    pixels = await screen(sandbox);
  }
  return pixels;
}

async function screen(sandbox: Sandbox): Promise<ScreenPixels> {
  const shot = await sandbox.desktop.screenshot();
  return decodePng(Buffer.from(shot.png));
}

describe('computer-use sessions on gVisor (issue 18)', { timeout: 900_000 }, () => {
  let installation: TestInstallation;
  let sandbox: Sandbox;

  before(async () => {
    await ensureTestDesktopImage();
    installation = await TestInstallation.start();
    sandbox = await Sandbox.create({
      url: installation.url,
      token: installation.token,
      image: 'debian-bookworm-desktop',
      contract: { version: 1, resources: { memoryMb: 1536 }, desktop: { width: 1280, height: 800 }, policies: POLICIES },
    });
    await sandbox.files.write('/workspace/page.html', PAGE);
  });

  after(async () => {
    await installation?.destroy();
  });

  it('starts the display with the machine, at the contract size', async () => {
    const geometry = await sandbox.commands.run(['xdotool', 'getdisplaygeometry']);
    assert.equal(geometry.stdout.trim(), '1280 800');
    const shot = await sandbox.desktop.screenshot();
    assert.equal(shot.width, 1280);
    assert.equal(shot.height, 800);
    assert.deepEqual([...shot.png.subarray(1, 4)], [0x50, 0x4e, 0x47], 'a PNG');
  });

  it('clicks a button found on the screenshot, and the page sees it', async () => {
    const pixels = await openPage(sandbox, 'Start');
    const red = centreOf(pixels, RED);
    const click = await sandbox.desktop.click(red.x, red.y);
    assert.deepEqual(click.pointer, red);
    assert.match(await waitForTitle(sandbox, 'Clicked A'), /^Clicked A/);
  });

  it('types into a text field and reads the value back', async () => {
    const field = centreOf(await screen(sandbox), GREEN);
    await sandbox.desktop.click(field.x, field.y);
    await sandbox.desktop.type('hello airlock');
    await waitForTitle(sandbox, 'Typed:hello airlock');
    await sandbox.desktop.key('BackSpace');
    await waitForTitle(sandbox, 'Typed:hello airloc');
  });

  it('starts the desktop helper again when something in the machine killed it', async () => {
    const helperPids = async () => (await sandbox.commands.run(['pgrep', '-f', 'exec.sys.stdin.read'])).stdout.trim().split('\n').filter(Boolean);
    const before = await helperPids();
    assert.equal(before.length, 1, 'the first desktop calls started one helper');
    assert.equal((await sandbox.commands.run(['kill', '-9', ...before])).exitCode, 0);
    const shot = await sandbox.desktop.screenshot();
    assert.equal(shot.width, 1280);
    const after = await helperPids();
    assert.equal(after.length, 1);
    assert.notDeepEqual(after, before);
  });

  it('audits every action with a thumbnail of the screen before it, kept and checkable', async () => {
    const records = await sandbox.audit({ limit: 1000 });
    // The decision on the screen (the second one; the first is taken before the machine is touched).
    const decided = records.filter(
      (record) => record.type === 'tool-call.authorized' && record.data['gen_ai.tool.name'] === 'desktop.act' && record.data['stage'] === 'screen',
    );
    assert.ok(decided.length >= 3, `${decided.length} authorized desktop actions`);
    const typed = decided.find((record) => (record.data['arguments'] as Record<string, unknown>)['action'] === 'type');
    assert.ok(typed);
    assert.equal((typed.data['arguments'] as Record<string, unknown>)['text'], undefined, 'typed text stays out of the audit');
    const thumbnail = typed.data['thumbnail'] as { name: string; sha256: string; width: number };
    assert.equal(thumbnail.width, 320);
    const response = await fetch(`${installation.url}/v1/sessions/${sandbox.id}/desktop/thumbnails/${thumbnail.name}`, {
      headers: { authorization: `Bearer ${installation.token}` },
    });
    assert.equal(response.status, 200);
    const png = Buffer.from(await response.arrayBuffer());
    assert.equal(createHash('sha256').update(png).digest('hex'), thumbnail.sha256);
    assert.equal((await sandbox.verifyAudit()).ok, true);
  });

  it('denies typing into a window whose title matches a policy, and nothing is typed', async () => {
    const pixels = await openPage(sandbox, 'Secret form');
    const field = centreOf(pixels, GREEN);
    await sandbox.desktop.click(field.x, field.y);
    await assert.rejects(sandbox.desktop.type('leak'), (error: unknown) => {
      assert.ok(error instanceof PolicyDeniedError, String(error));
      assert.deepEqual((error.details['decision'] as { policyIds: string[] }).policyIds, ['no-typing-into-secrets']);
      return true;
    });
    // A key that would have changed the field shows nothing arrived before it either.
    await sandbox.desktop.wait(300);
    assert.equal(await windowTitle(sandbox), 'Secret form - Chromium');
  });

  it('holds a click on an "Approve me" window for a human, and runs it once approved', async () => {
    const pixels = await openPage(sandbox, 'Approve me');
    const red = centreOf(pixels, RED);
    let approvalId = '';
    await assert.rejects(sandbox.desktop.click(red.x, red.y, { waitForApproval: false }), (error: unknown) => {
      assert.ok(error instanceof ApprovalPendingError);
      approvalId = String(error.details['approvalId']);
      return true;
    });
    assert.equal(await windowTitle(sandbox), 'Approve me - Chromium', 'nothing happened while held');
    await sandbox.approvals.approve(approvalId);
    const outcome = await sandbox.approvals.waitForOutcome(approvalId);
    assert.equal(outcome.status, 'completed');
    await waitForTitle(sandbox, 'Clicked A');
  });

  it('suspends and resumes with the page intact', async () => {
    const field = centreOf(await openPage(sandbox, 'Before suspend'), GREEN);
    await sandbox.desktop.click(field.x, field.y);
    await sandbox.desktop.type('kept');
    await waitForTitle(sandbox, 'Typed:kept');
    assert.equal((await sandbox.suspend()).state, 'suspended');
    // The next call wakes the machine: the same window, with the text typed before, takes more keys.
    assert.equal(await windowTitle(sandbox), 'Typed:kept - Chromium');
    await sandbox.desktop.type('!');
    await waitForTitle(sandbox, 'Typed:kept!');
  });

  it('forks into two branches with the same screen and their own identity, each clicking its own button', async () => {
    const pixels = await openPage(sandbox, 'Fork');
    const [left, right] = await sandbox.fork({ count: 2 });
    assert.ok(left && right);
    try {
      const hostnames = await Promise.all([left, right].map(async (branch) => (await branch.commands.run('hostname')).stdout.trim()));
      assert.notEqual(hostnames[0], hostnames[1]);
      for (const branch of [left, right]) assert.equal(await windowTitle(branch), 'Fork - Chromium', 'the same screen in each branch');
      const red = centreOf(pixels, RED);
      const blue = centreOf(pixels, BLUE);
      await Promise.all([left.desktop.click(red.x, red.y), right.desktop.click(blue.x, blue.y)]);
      await waitForTitle(left, 'Clicked A');
      await waitForTitle(right, 'Clicked B');
      assert.equal(await windowTitle(sandbox), 'Fork - Chromium', 'the parent is untouched');
    } finally {
      await Promise.all([left.kill(), right.kill()]);
    }
  });

  it('streams the display to a live view that is view-only, until a takeover, which holds the agent and is recorded', async () => {
    const pixels = await openPage(sandbox, 'Live');
    const blue = centreOf(pixels, BLUE);
    const red = centreOf(pixels, RED);

    // Authenticated like every route: a wrong token never reaches the display.
    const stranger = new WebSocket(`${installation.url.replace('http', 'ws')}/v1/sessions/${sandbox.id}/desktop/vnc`, {
      headers: { authorization: 'Bearer wrong' },
    });
    stranger.on('error', () => undefined);
    const refused = await new Promise<number>((resolve) =>
      stranger
        .once('unexpected-response', (request, response) => {
          resolve(response.statusCode ?? 0);
          request.destroy();
        })
        .once('open', () => {
          resolve(101);
          stranger.close();
        }),
    );
    assert.equal(refused, 401);
    const plain = await fetch(`${installation.url}/v1/sessions/${sandbox.id}/desktop/vnc`, { headers: { authorization: `Bearer ${installation.token}` } });
    assert.equal(plain.status, 400, 'a GET without the upgrade is told it is a WebSocket');
    assert.equal(((await plain.json()) as { error: { code: string } }).error.code, 'INVALID_REQUEST');

    // View-only: the server drops the viewer's pointer events.
    const watcher = await openLiveView(installation, sandbox.id);
    assert.equal(watcher.width, 1280);
    watcher.click(blue.x, blue.y);
    await sandbox.desktop.wait(500);
    assert.equal(await windowTitle(sandbox), 'Live - Chromium');
    watcher.close();

    const takeover = await sandbox.desktop.takeOver('e2e person');
    const agentClick = sandbox.desktop.click(red.x, red.y);
    const person = await openLiveView(installation, sandbox.id, takeover.id);
    person.click(blue.x, blue.y);
    await waitForTitle(sandbox, 'Clicked B');
    const records = await sandbox.audit({ limit: 1000 });
    assert.ok(
      records.some((record) => record.type === 'tool-call.waiting' && record.data['reason'] === 'TAKEOVER'),
      'the agent waits with the reason TAKEOVER',
    );
    person.close();
    const ended = await sandbox.desktop.handBack();
    assert.ok(ended.inputEvents >= 2, `${ended.inputEvents} input events recorded`);
    assert.ok(ended.frames >= 1, `${ended.frames} frames recorded`);
    const result = await agentClick;
    assert.ok((result.takeoverWaitMs ?? 0) > 0);
    await waitForTitle(sandbox, 'Clicked A');
    const log = await sandbox.audit({ limit: 1000 });
    const endRecord = log.find((record) => record.type === 'desktop.takeover-ended');
    assert.equal(endRecord?.data['recording'], `/v1/sessions/${sandbox.id}/desktop/takeovers/${takeover.id}`);
  });
});

/** A minimal VNC viewer over the live view's WebSocket: handshake, then pointer clicks. */
async function openLiveView(
  installation: TestInstallation,
  sessionId: string,
  takeoverId?: string,
): Promise<{ width: number; click(x: number, y: number): void; close(): void }> {
  const url = `${installation.url.replace('http', 'ws')}/v1/sessions/${sessionId}/desktop/vnc${takeoverId ? `?takeover=${takeoverId}` : ''}`;
  const socket = new WebSocket(url, { headers: { authorization: `Bearer ${installation.token}` } });
  let received = Buffer.alloc(0);
  const waiters: (() => void)[] = [];
  socket.on('message', (data: Buffer) => {
    received = Buffer.concat([received, data]);
    for (const wake of waiters.splice(0)) wake();
  });
  const take = async (bytes: number): Promise<Buffer> => {
    while (received.length < bytes) await new Promise<void>((resolve) => waiters.push(resolve));
    const head = received.subarray(0, bytes);
    received = received.subarray(bytes);
    return head;
  };
  await new Promise<void>((resolve, reject) => socket.once('open', resolve).once('error', reject));
  assert.equal((await take(12)).toString('latin1'), 'RFB 003.008\n');
  socket.send(Buffer.from('RFB 003.008\n', 'latin1'));
  const count = (await take(1))[0] as number;
  assert.ok([...(await take(count))].includes(1), 'security type None offered');
  socket.send(Buffer.from([1]));
  assert.equal((await take(4)).readUInt32BE(0), 0, 'security result OK');
  socket.send(Buffer.from([1]));
  const init = await take(24);
  await take(init.readUInt32BE(20));
  const pointer = (x: number, y: number, buttons: number) => {
    const message = Buffer.alloc(6);
    message[0] = 5;
    message[1] = buttons;
    message.writeUInt16BE(x, 2);
    message.writeUInt16BE(y, 4);
    socket.send(message);
  };
  return {
    width: init.readUInt16BE(0),
    click(x, y) {
      pointer(x, y, 0);
      pointer(x, y, 1);
      pointer(x, y, 0);
    },
    close: () => socket.close(),
  };
}
