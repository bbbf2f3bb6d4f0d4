/**
 * The web console in a real browser (Debian's Chromium, headless) against a
 * real server process on gVisor: login, the live sessions list, the approval
 * queue (approve runs the held call, deny gives the agent APPROVAL_DENIED),
 * CSRF, a denied action's reason, the takeover terminal (a shell in the
 * machine, the agent held until hand-back, the recording in the audit), a
 * lost event stream, and log out.
 * With AIRLOCK_SCREENSHOT_DIR set, it also saves a screenshot of each page.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { TestInstallation } from '@airlock/cli/dist/test/support/test-installation.js';
import { HeadlessChromium, chromiumMissing } from '../support/headless-chromium.js';

const CONTRACT = fileURLToPath(new URL('../../../../../examples/contracts/no-rm-approve-tar.json', import.meta.url));
const SCREENSHOTS = process.env['AIRLOCK_SCREENSHOT_DIR'];

async function screenshot(page: Page, name: string, fullPage = false): Promise<void> {
  if (SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage });
}

async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('the web console in Chromium', { skip: chromiumMissing() }, () => {
  let installation: TestInstallation;
  let browser: HeadlessChromium;
  let page: Page;
  let sessionId: string;
  const pageErrors: string[] = [];
  const policyViolations: string[] = [];

  /** The API as this test's own client (bearer token), to check what the browser did. */
  async function apiGet<T>(path: string): Promise<T> {
    const response = await fetch(`${installation.url}${path}`, { headers: { authorization: `Bearer ${installation.token}` } });
    assert.equal(response.status, 200, `${path}: ${await response.clone().text()}`);
    return (await response.json()) as T;
  }

  /** The login cookie the browser holds. */
  async function loginCookie(): Promise<{ name: string; value: string; httpOnly: boolean; sameSite: string; path: string } | undefined> {
    return (await browser.context.cookies(installation.url)).find((cookie) => cookie.name === 'airlock_login');
  }

  async function logIn(token: string): Promise<void> {
    await page.fill('#token', token);
    await page.click('button[type=submit]');
  }

  /** Runs a held exec in the background and returns its approval id once it is parked. */
  async function holdTar(archive: string): Promise<{ approvalId: string; agent: ReturnType<TestInstallation['cliAsync']> }> {
    const known = new Set((await apiGet<{ approvals: { id: string }[] }>('/v1/approvals')).approvals.map((approval) => approval.id));
    const agent = installation.cliAsync(['exec', sessionId, '--', 'tar', 'cf', archive, '/workspace']);
    const approvalId = await waitFor(async () => {
      const { approvals } = await apiGet<{ approvals: { id: string; state: string }[] }>('/v1/approvals?state=pending');
      return approvals.find((approval) => !known.has(approval.id))?.id;
    }, 'the held tar');
    return { approvalId, agent };
  }

  before(async () => {
    installation = await TestInstallation.start();
    browser = await HeadlessChromium.launch();
    page = browser.context.pages()[0] ?? (await browser.context.newPage());
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) policyViolations.push(message.text());
    });
  });

  after(async () => {
    await browser?.close();
    await installation?.destroy();
  });

  it('refuses a wrong token and sets no cookie', async () => {
    await page.goto(installation.url);
    await page.waitForSelector('#token');
    assert.equal(await page.getAttribute('#token', 'type'), 'password');
    await screenshot(page, 'login');
    await logIn('not-the-token');
    const error = await page.waitForSelector('[data-testid=login-error]');
    assert.match((await error.textContent()) ?? '', /not this server/);
    assert.equal(await loginCookie(), undefined);
    const status = await page.evaluate(async () => (await fetch('/v1/sessions')).status);
    assert.equal(status, 401);
  });

  it('logs in with the token: an HttpOnly, SameSite=Strict cookie holding a login id, not the token', async () => {
    await logIn(installation.token);
    await page.waitForSelector('[data-testid=stream-status]:has-text("live")');
    const cookie = await loginCookie();
    assert.ok(cookie, 'a login cookie');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.equal(cookie.path, '/');
    assert.notEqual(cookie.value, installation.token);
    assert.equal(await page.evaluate(() => document.cookie), '', 'the page script cannot read the cookie');
    const whoami = await page.evaluate(async () => (await fetch('/v1/whoami')).json());
    assert.deepEqual(whoami.identity, { kind: 'console', tokenId: 'admin', tenant: '*', role: 'admin', name: 'admin' });
  });

  it('shows a new session without a reload', async () => {
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    const created = installation.cli(['sessions', 'create', '--contract', CONTRACT]);
    assert.equal(created.code, 0, created.stderr);
    sessionId = created.stdout.trim();
    const row = await page.waitForSelector(`tr[data-session-id="${sessionId}"][data-state="running"]`);
    assert.match((await row.textContent()) ?? '', /acme/);
    assert.equal(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded), true);
    await page.fill('[data-testid=filter-text]', 'no-such-session');
    await page.waitForSelector('[data-testid=no-sessions]');
    await page.fill('[data-testid=filter-text]', sessionId.slice(4, 12));
    await page.waitForSelector(`tr[data-session-id="${sessionId}"]`);
    await page.fill('[data-testid=filter-text]', '');
  });

  it('refuses a POST that has the cookie but not the CSRF header, and nothing changes', async () => {
    const answer = await page.evaluate(async (id) => {
      const response = await fetch(`/v1/sessions/${id}/suspend`, { method: 'POST', credentials: 'same-origin' });
      return { status: response.status, body: await response.json() };
    }, sessionId);
    assert.equal(answer.status, 403);
    assert.equal(answer.body.error.code, 'CSRF_REJECTED');
    const session = await apiGet<{ state: string; pendingOperation: string | null }>(`/v1/sessions/${sessionId}`);
    assert.equal(session.state, 'running');
    assert.equal(session.pendingOperation, null);
  });

  it('shows a held call in the queue without a reload; approving it runs the call once, recorded as the console login', async () => {
    await page.click('a[href="/approvals"]');
    await page.waitForSelector('[data-testid=approvals-pending]', { state: 'attached' });
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    const { approvalId, agent } = await holdTar('/tmp/approved.tar');
    const card = await page.waitForSelector(`[data-approval-id="${approvalId}"][data-state="pending"]`);
    const text = (await card.textContent()) ?? '';
    assert.match(text, /tar cf \/tmp\/approved\.tar \/workspace/);
    assert.match(text, /policy2/);
    assert.match(text, /requires approval/);
    await page.waitForSelector(`[data-approval-id="${approvalId}"] [data-testid=objective]:has-text("fix the failing test")`);
    await page.waitForSelector('[data-testid=pending-count]:has-text("1")');
    assert.equal(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded), true);
    await page.setViewportSize({ width: 375, height: 812 });
    await screenshot(page, 'approvals-phone', true);
    await page.fill(`[data-approval-id="${approvalId}"] textarea`, 'archive is fine');
    await page.click(`[data-approval-id="${approvalId}"] button.primary`);
    const ran = await agent;
    assert.equal(ran.code, 0, ran.stderr);
    const approval = await apiGet<{ state: string; decidedBy: string; decisionReason: string }>(`/v1/approvals/${approvalId}`);
    assert.equal(approval.state, 'executed');
    assert.equal(approval.decidedBy, 'console:admin');
    assert.equal(approval.decisionReason, 'archive is fine');
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.click('button[role=tab]:has-text("Decided")');
    const decided = await page.waitForSelector(`[data-approval-id="${approvalId}"] [data-testid=decided-by]`);
    assert.match((await decided.textContent()) ?? '', /console:admin/);
  });

  it('denying a held call gives the agent APPROVAL_DENIED and the call never runs', async () => {
    await page.click('button[role=tab]:has-text("Waiting")');
    const { approvalId, agent } = await holdTar('/tmp/denied.tar');
    await page.waitForSelector(`[data-approval-id="${approvalId}"][data-state="pending"]`);
    await page.fill(`[data-approval-id="${approvalId}"] textarea`, 'not now');
    await page.click(`[data-approval-id="${approvalId}"] button.danger`);
    const refused = await agent;
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /APPROVAL_DENIED/);
    assert.match(refused.stderr, /not now/);
    const exists = installation.cli(['exec', sessionId, '--', 'test', '-e', '/tmp/denied.tar']);
    assert.equal(exists.code, 1, 'the denied tar never ran');
  });

  it("shows a session's page: timeline, meters, contract, files through the airlock, live tool calls and a verified audit", async () => {
    assert.equal(installation.cli(['exec', sessionId, '--', 'sh', '-c', 'echo hello console > /workspace/notes.txt && mkdir -p /workspace/secret']).code, 0);
    await page.goto(`${installation.url}/sessions/${sessionId}`);
    await page.waitForSelector('[data-testid=audit-verify]:has-text("chain intact")');
    await page.waitForSelector('[data-testid=timeline]:has-text("session.started")');
    await page.waitForSelector('[data-testid=contract]:has-text("fix the failing test")');
    await page.click('[data-testid=files] button.link:has-text("notes.txt")');
    const viewer = await page.waitForSelector('[data-testid=file-viewer]');
    assert.match((await viewer.textContent()) ?? '', /hello console/);
    // Download and upload go through the same tool routes.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=files] tr[data-file="notes.txt"] button:has-text("Download")')]);
    assert.equal(download.suggestedFilename(), 'notes.txt');
    const downloaded = await download.path();
    assert.equal(readFileSync(downloaded, 'utf8'), 'hello console\n');
    await page.setInputFiles('[data-testid=files] input[type=file]', { name: 'from-browser.bin', mimeType: 'application/octet-stream', buffer: Buffer.from([0, 1, 2, 255, 10]) });
    await page.waitForSelector('[data-testid=files] tr[data-file="from-browser.bin"]');
    const uploaded = installation.cli(['exec', sessionId, '--', 'od', '-An', '-tu1', '/workspace/from-browser.bin']);
    assert.equal(uploaded.stdout.trim().split(/\s+/).join(' '), '0 1 2 255 10');
    // A call made now shows up in the page's tool calls without a reload.
    assert.equal(installation.cli(['exec', sessionId, '--', 'echo', 'live-call-marker']).code, 0);
    await page.waitForSelector('[data-testid=tool-calls] li:has-text("live-call-marker")');
    // The files API read is in the audit, like any agent call.
    const audit = await apiGet<{ records: { type: string; data: Record<string, unknown> }[] }>(`/v1/sessions/${sessionId}/audit`);
    assert.ok(audit.records.some((record) => record.type === 'tool-call.completed' && record.data['gen_ai.tool.name'] === 'files.read'));
    await page.waitForSelector('[data-testid=terminal] button:has-text("Take over")');
    await screenshot(page, 'session');
  });

  it('shows the policy’s reason when an action is denied, and writes nothing', async () => {
    await page.click('[data-testid=files] button.link:has-text("secret/")');
    await page.waitForSelector('[data-testid=files-path]:has-text("/workspace/secret")');
    await page.setInputFiles('[data-testid=files] input[type=file]', { name: 'leak.txt', mimeType: 'text/plain', buffer: Buffer.from('x') });
    const banner = await page.waitForSelector('[data-testid=files] [role=alert][data-code=POLICY_DENIED]');
    assert.match((await banner.textContent()) ?? '', /denyWrite|denied|forbid/i);
    assert.equal(installation.cli(['exec', sessionId, '--', 'test', '-e', '/workspace/secret/leak.txt']).code, 1);
  });

  it('takes over in a terminal: a command runs in the machine, the agent waits until hand-back, and the recording is linked from the audit', async () => {
    await page.goto(`${installation.url}/sessions/${sessionId}`);
    await page.click('[data-testid=terminal] button:has-text("Take over")');
    await page.waitForSelector('[data-testid=terminal-status]:has-text("You hold the session")');
    await page.locator('.xterm-helper-textarea').focus();
    await page.keyboard.type('echo console-$((40+2)); stty size');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.xterm-rows:has-text("console-42")');
    await page.waitForSelector('.xterm-rows:has-text("28 100")');
    await screenshot(page, 'terminal');
    let agentDone = false;
    const agent = installation.cliAsync(['exec', sessionId, '--', 'echo', 'after-hand-back']).finally(() => (agentDone = true));
    await waitFor(async () => {
      const { records } = await apiGet<{ records: { type: string; data: Record<string, unknown> }[] }>(`/v1/sessions/${sessionId}/audit?limit=1000`);
      return records.some((record) => record.type === 'tool-call.waiting' && record.data['reason'] === 'TAKEOVER') ? true : undefined;
    }, 'the agent call waiting with reason TAKEOVER');
    assert.equal(agentDone, false, 'the agent call ran while the person held the session');
    await page.click('[data-testid=terminal-view] button:has-text("Hand back")');
    const ran = await agent;
    assert.equal(ran.code, 0, ran.stderr);
    assert.equal(ran.stdout.trim(), 'after-hand-back');
    const { records } = await apiGet<{ records: { type: string; data: Record<string, unknown> }[] }>(`/v1/sessions/${sessionId}/audit?limit=1000`);
    const ended = records.find((record) => record.type === 'takeover.ended');
    assert.equal(ended?.data['by'], 'console:admin');
    assert.equal(ended?.data['client'], 'console');
    // A locator, not a handle: the audit list re-renders as records stream in, which detaches old elements.
    const link = page.locator('[data-testid=audit] a[data-testid=takeover-recording]').first();
    await link.waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    const cast = readFileSync(await download.path(), 'utf8').split('\n');
    assert.equal((JSON.parse(cast[0] ?? '{}') as { version: number }).version, 2);
    assert.match(cast.slice(1).join('\n'), /console-42/);
  });

  it('snapshots, forks, suspends, resumes and (after a confirmation) terminates a session from its page', async () => {
    const created = installation.cli(['sessions', 'create']);
    assert.equal(created.code, 0, created.stderr);
    const id = created.stdout.trim();
    await page.goto(`${installation.url}/sessions/${id}`);
    const actions = `.session-page > .actions[data-session="${id}"]`;
    await page.waitForSelector(`${actions} button:has-text("Suspend"):not([disabled])`);

    await page.click(`${actions} button:has-text("Snapshot")`);
    await page.fill('.dialog input[type=text]', 'before-fork');
    await page.click('.dialog button.primary');
    await page.waitForSelector(`${actions} .made:has-text("snapshot")`, { timeout: 120_000 });
    await page.waitForSelector('[data-testid=lineage]:has-text("before-fork")');

    await page.click(`${actions} button:has-text("Fork")`);
    await page.fill('.dialog input[type=number]', '1');
    await page.click('.dialog button.primary');
    await page.waitForSelector(`${actions} .made:has-text("1 of 1 branches made")`, { timeout: 120_000 });
    const branch = await waitFor(async () => {
      const { sessions } = await apiGet<{ sessions: { id: string; lineage: { parentSessionId: string } | null }[] }>('/v1/sessions');
      return sessions.find((session) => session.lineage?.parentSessionId === id)?.id;
    }, 'the branch');
    await page.waitForSelector(`[data-testid=lineage] a:has-text("${branch}")`);

    await page.click(`${actions} button:has-text("Suspend")`);
    await page.waitForSelector(`.session-page .page-head [data-state="suspended"]`, { timeout: 120_000 });
    await page.click(`${actions} button:has-text("Resume")`);
    // Waking a suspended machine restores its memory image: the page says so while it takes.
    await page.waitForSelector(`${actions} .busy:has-text("Waking")`);
    await page.waitForSelector(`.session-page .page-head [data-state="running"]`, { timeout: 120_000 });
    await page.waitForSelector('[data-testid=timeline]:has-text("session.suspended")');

    await page.click(`${actions} button:has-text("Terminate")`);
    await page.waitForSelector('.dialog:has-text("cannot be undone")');
    await page.click('.dialog button:has-text("Cancel")');
    assert.equal((await apiGet<{ state: string }>(`/v1/sessions/${id}`)).state, 'running', 'Cancel changes nothing');
    await page.click(`${actions} button:has-text("Terminate")`);
    await page.click('.dialog button.danger');
    await page.waitForSelector(`.session-page .page-head [data-state="terminated"]`, { timeout: 120_000 });
    assert.equal((await apiGet<{ state: string }>(`/v1/sessions/${id}`)).state, 'terminated');
    assert.equal(installation.cli(['sessions', 'rm', branch]).code, 0);
  });

  it('shows a lost event stream, and after the server comes back sends the person to log in again', async () => {
    await page.goto(installation.url);
    await page.waitForSelector('[data-testid=stream-status]:has-text("live")');
    await installation.stopServer();
    await page.waitForSelector('[data-testid=stream-lost]');
    await installation.startServer();
    // Console logins live in the server's memory: after a restart the person logs in again, told why.
    const notice = await page.waitForSelector('[data-testid=login-notice]');
    assert.match((await notice.textContent()) ?? '', /expired or was ended/);
    await logIn(installation.token);
    await page.waitForSelector(`tr[data-session-id="${sessionId}"]`);
    await page.waitForSelector('[data-testid=stream-status]:has-text("live")');
    await page.selectOption('[data-testid=filter-state]', '');
    await page.waitForSelector('tr[data-state="terminated"]');
    await screenshot(page, 'sessions');
    await page.selectOption('[data-testid=filter-state]', 'live');
  });

  it('logs out: the login ends on the server, and its cookie no longer works', async () => {
    const cookie = await loginCookie();
    assert.ok(cookie);
    await page.click('button:has-text("Log out")');
    await page.waitForSelector('[data-testid=login-notice]:has-text("logged out")');
    assert.equal(await loginCookie(), undefined, 'the browser dropped the cookie');
    const replayed = await fetch(`${installation.url}/v1/sessions`, { headers: { cookie: `airlock_login=${cookie.value}` } });
    assert.equal(replayed.status, 401);
    assert.equal(((await replayed.json()) as { error: { code: string } }).error.code, 'LOGIN_EXPIRED');
    assert.deepEqual(pageErrors, [], 'no script errors in the page');
    assert.deepEqual(policyViolations, [], 'nothing the Content-Security-Policy had to block (xterm.js included)');
  });
});
