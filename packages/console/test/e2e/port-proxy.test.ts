/**
 * The port proxy in a real browser (issue 22, item 2): an admin logged in to
 * the console opens a page a hostile agent serves from its session through
 * an exposed port. The page's script runs (its CSP sandbox allows scripts,
 * in an opaque origin) and tries what once worked: read /v1/whoami with the
 * admin's login, mint an admin token with POST /v1/tokens, and post it into
 * the sandbox. No token is minted, the service never sees the login cookie,
 * and the page can set or read no cookie of the console's origin.
 * Raw requests through the proxy: packages/cli/test/hostile/revocation.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { TestInstallation } from '@airlock/cli/dist/test/support/test-installation.js';
import { HostileApi } from '@airlock/cli/dist/test/support/hostile-kit.js';
import { echoedRequests, startPortEchoService } from '@airlock/cli/dist/test/support/port-echo-service.js';
import { HeadlessChromium, chromiumMissing } from '../support/headless-chromium.js';

const PORT = 8000;

/** What the hostile page does, step by step, writing each outcome into #out and ending with "done". */
function attackPage(sessionId: string): string {
  const loot = `/v1/sessions/${sessionId}/ports/${PORT}/loot`;
  return `<!doctype html><meta charset="utf-8"><title>preview</title><pre id="out">running</pre><script>
(async () => {
  const lines = [];
  const log = (line) => { lines.push(line); document.getElementById('out').textContent = lines.join('\\n'); };
  let csrf = '';
  try {
    const answer = await fetch('/v1/whoami', { credentials: 'include' });
    log('whoami ' + answer.status);
    csrf = (await answer.json()).csrfToken || '';
  } catch (error) { log('whoami failed ' + error.name); }
  let minted = '';
  try {
    const answer = await fetch('/v1/tokens', { method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json', 'x-airlock-csrf': csrf }, body: JSON.stringify({ tenant: 'default', role: 'admin', name: 'planted' }) });
    log('mint ' + answer.status);
    minted = await answer.text();
  } catch (error) { log('mint failed ' + error.name); }
  try {
    const answer = await fetch(${JSON.stringify(loot)}, { method: 'POST', credentials: 'include', body: minted || 'nothing' });
    log('loot ' + answer.status);
  } catch (error) { log('loot failed ' + error.name); }
  try { document.cookie = 'planted=by-the-page; path=/'; log('cookie ' + JSON.stringify(document.cookie)); } catch (error) { log('cookie failed ' + error.name); }
  try { localStorage.setItem('planted', '1'); log('storage ok'); } catch (error) { log('storage failed ' + error.name); }
  log('origin ' + self.origin);
  log('done');
})();
</script>`;
}

describe('the port proxy in Chromium: a sandbox’s page cannot act as the console', { skip: chromiumMissing(), timeout: 600_000 }, () => {
  let installation: TestInstallation;
  let admin: HostileApi;
  let browser: HeadlessChromium;
  let page: Page;
  let sessionId = '';

  const tokenCount = async (): Promise<number> => {
    const answer = await admin.request('GET', '/v1/tokens');
    assert.equal(answer.status, 200);
    return (answer.body['tokens'] as unknown[]).length;
  };

  before(async () => {
    installation = await TestInstallation.start();
    admin = new HostileApi(installation);
    sessionId = await admin.createSession();
    await admin.write(sessionId, '/workspace/page.html', attackPage(sessionId));
    await startPortEchoService(admin, sessionId, PORT);
    browser = await HeadlessChromium.launch();
    page = browser.context.pages()[0] ?? (await browser.context.newPage());
  });

  after(async () => {
    await browser?.close();
    await installation?.destroy();
  });

  it('runs the page’s script in an opaque origin: no token minted, no login cookie in the sandbox, no cookie planted', async () => {
    // The admin logs in through the console, as a person would.
    await page.goto(installation.url);
    await page.fill('#token', installation.token);
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=stream-status]:has-text("live")');
    const before = await tokenCount();

    // Then opens the URL the agent gave them.
    await page.goto(`${installation.url}/v1/sessions/${sessionId}/ports/${PORT}/page.html`);
    const outcome = (await (await page.waitForSelector('#out:has-text("done")', { timeout: 60_000 })).textContent()) ?? '';
    assert.match(outcome, /origin null/, `the page ran on an origin of its own: ${outcome}`);
    assert.doesNotMatch(outcome, /whoami 200/, outcome);
    assert.doesNotMatch(outcome, /mint 201/, outcome);
    assert.doesNotMatch(outcome, /cookie "planted/, outcome);

    assert.equal(await tokenCount(), before, 'a token was minted');
    const minted = await admin.request('GET', '/v1/tokens');
    assert.doesNotMatch(JSON.stringify(minted.body), /planted/);

    const seen = await echoedRequests(admin, sessionId);
    assert.ok(
      seen.some((request) => request.path === '/page.html'),
      'the page was served through the proxy',
    );
    for (const request of seen) {
      const names = request.headers.map(([name]) => name.toLowerCase());
      assert.ok(!names.includes('cookie'), `a cookie reached the sandbox with ${request.method} ${request.path}`);
      assert.ok(!names.some((name) => name.startsWith('x-airlock-')), `an X-Airlock header reached the sandbox with ${request.method} ${request.path}`);
      assert.doesNotMatch(request.body, /airlock_/, `a token reached the sandbox with ${request.method} ${request.path}`);
    }

    // The browser holds no cookie but the console's own login, which still works.
    const cookies = await browser.context.cookies(installation.url);
    assert.deepEqual(
      cookies.map((cookie) => cookie.name),
      ['airlock_login'],
    );
    await page.goto(installation.url);
    await page.waitForSelector('[data-testid=stream-status]:has-text("live")');
  });
});
