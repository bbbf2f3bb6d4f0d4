/**
 * The console's live view of a desktop session (issue 18, item 3), in a real
 * browser against a real server on gVisor: noVNC over the authenticated
 * WebSocket shows the session's screen and its pixels change when the
 * desktop does; the view is view-only until "Take over", after which the
 * person's click reaches the page; handing back ends the recorded takeover.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { Sandbox } from '@airlock/sdk';
import { TestInstallation, ensureTestDesktopImage } from '@airlock/cli/dist/test/support/test-installation.js';
import { HeadlessChromium, chromiumMissing } from '../support/headless-chromium.js';

/** A white page, and one whose blue button fills the window (title "Clicked" once it is clicked). */
const WHITE = '<!doctype html><title>White</title><body style="margin:0;background:#fff"></body>';
const BLUE = `<!doctype html><title>Blue</title><body style="margin:0"><button id="b" style="position:fixed;inset:0;border:0;background:#0000ff"
  onclick="document.title='Clicked'"></button></body>`;

async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** How many of the live view's pixels are (nearly) pure blue. */
function bluePixels(page: Page): Promise<number> {
  return page.evaluate(() => {
    const canvas = document.querySelector<HTMLCanvasElement>('[data-testid=desktop-view] canvas');
    const context = canvas?.getContext('2d');
    if (!canvas || !context || canvas.width === 0) return -1;
    const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
    let count = 0;
    for (let index = 0; index < data.length; index += 4) if ((data[index] as number) < 16 && (data[index + 1] as number) < 16 && (data[index + 2] as number) > 240) count++;
    return count;
  });
}

describe('the console live view of a desktop session', { skip: chromiumMissing(), timeout: 600_000 }, () => {
  let installation: TestInstallation;
  let browser: HeadlessChromium;
  let page: Page;
  let sandbox: Sandbox;

  const title = async () => (await sandbox.commands.run(['xdotool', 'getactivewindow', 'getwindowname'])).stdout.trim();
  const open = async (file: string, expected: string) => {
    await sandbox.commands.run(['airlock-browser', `file:///workspace/${file}`]);
    await waitFor(async () => ((await title()).startsWith(expected) ? true : undefined), `the ${expected} page`);
  };

  before(async () => {
    await ensureTestDesktopImage();
    installation = await TestInstallation.start();
    sandbox = await Sandbox.create({ url: installation.url, token: installation.token, image: 'debian-bookworm-desktop', contract: { version: 1, resources: { memoryMb: 1536 } } });
    await sandbox.files.write('/workspace/white.html', WHITE);
    await sandbox.files.write('/workspace/blue.html', BLUE);
    await open('white.html', 'White');
    browser = await HeadlessChromium.launch();
    page = browser.context.pages()[0] ?? (await browser.context.newPage());
    await page.goto(installation.url);
    await page.fill('#token', installation.token);
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=stream-status]:has-text("live")');
  });

  after(async () => {
    await browser?.close();
    await installation?.destroy();
  });

  it("shows the session's screen live, and its pixels change with the desktop", async () => {
    await page.goto(`${installation.url}/sessions/${sandbox.id}`);
    await page.waitForSelector('[data-testid=desktop-status]:has-text("live, view only")');
    const before = await waitFor(async () => {
      const count = await bluePixels(page);
      return count >= 0 ? count : undefined;
    }, 'the first frame');
    assert.ok(before < 1000, `${before} blue pixels on a white page`);
    await open('blue.html', 'Blue');
    const after = await waitFor(async () => {
      const count = await bluePixels(page);
      return count > 200_000 ? count : undefined;
    }, 'the blue page in the live view');
    assert.ok(after > before);
  });

  it('sends nothing while view-only; after "Take over" the click reaches the page, and handing back ends the recording', async () => {
    const view = page.locator('[data-testid=desktop-view] canvas');
    await view.click({ position: { x: 200, y: 200 } });
    await sandbox.desktop.wait(500);
    assert.equal(await title(), 'Blue - Chromium', 'a view-only click changes nothing');

    await page.click('[data-testid=desktop-take-over]');
    await page.waitForSelector('[data-testid=desktop-status]:has-text("your input goes through")');
    const desktop = await (await fetch(`${installation.url}/v1/sessions/${sandbox.id}/desktop`, { headers: { authorization: `Bearer ${installation.token}` } })).json();
    assert.equal(desktop.takeover.by, 'console:admin', 'the takeover is the console login');
    await page.locator('[data-testid=desktop-view] canvas').click({ position: { x: 200, y: 200 } });
    await waitFor(async () => ((await title()).startsWith('Clicked') ? true : undefined), "the person's click");
    await page.click('[data-testid=desktop-hand-back]');
    await page.waitForSelector('[data-testid=desktop-status]:has-text("live, view only")');
    const records = await sandbox.audit({ limit: 1000 });
    const ended = records.find((record) => record.type === 'desktop.takeover-ended');
    assert.ok(ended, 'the takeover ended in the audit');
    assert.ok(Number(ended.data['inputEvents']) >= 1, `${String(ended.data['inputEvents'])} input events recorded`);
  });
});
