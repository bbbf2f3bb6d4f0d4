/**
 * Hostile suite: approvals. A held call runs exactly once, and only after a
 * human approved it in time: approving twice or 30 times at once, approving
 * after a denial or after expiry, reading another session's approval from a
 * session's MCP endpoint, naming a different approver in the body, and a
 * server crash right after the approval. Each held command appends one line
 * to a file of its session, so "ran once" is a line count.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TestInstallation } from '../support/test-installation.js';
import { HostileApi, needle, waitFor, type Answer } from '../support/hostile-kit.js';

/** Exec calls running tar, and every files.edit, wait for a human. */
const HOLDING_CONTRACT = {
  version: 1,
  idle: { keepAwake: true },
  policies: [
    'permit(principal, action, resource);',
    '@approval("required") permit(principal, action == Airlock::Action::"exec", resource) when { context.programs.contains("tar") };',
    '@approval("required") permit(principal, action == Airlock::Action::"files.edit", resource);',
  ],
};

interface ApprovalView {
  id: string;
  state: string;
  decidedBy: string | null;
  outcome?: { status: string; error?: { code: string; message: string } };
}

describe('hostile: a held call runs once, after a human approved it in time, and never otherwise', { timeout: 600_000 }, () => {
  let installation: TestInstallation;
  let api: HostileApi;
  let held = '';
  let other = '';

  /** Holds a command that appends one line to /workspace/runs-<label>.txt; returns the approval id. */
  const hold = async (sessionId: string, label: string): Promise<string> => {
    const answer = await api.tool(sessionId, 'exec', { command: `tar --version >/dev/null && echo ${label} >> /workspace/runs-${label}.txt && echo output-of-${label}` });
    assert.equal(answer.status, 202, `the call was held: ${answer.status} ${answer.code} ${answer.message}`);
    return String(answer.body['approvalId']);
  };
  /** How many times the held command of `label` ran. */
  const runs = async (sessionId: string, label: string): Promise<number> => {
    const read = await api.tool(sessionId, 'files.read', { path: `/workspace/runs-${label}.txt` });
    if (read.code === 'FILE_NOT_FOUND') return 0;
    assert.equal(read.code, 'ok', `${read.code} ${read.message}`);
    return String(read.result['content']).split('\n').filter(Boolean).length;
  };
  const approval = async (id: string, waitSeconds = 0): Promise<ApprovalView> => {
    const answer = await api.request('GET', `/v1/approvals/${id}${waitSeconds ? `?waitSeconds=${waitSeconds}` : ''}`);
    assert.equal(answer.status, 200, `${answer.code} ${answer.message}`);
    return answer.body as unknown as ApprovalView;
  };
  const decide = (id: string, verdict: 'approve' | 'deny', body: Record<string, unknown> = {}): Promise<Answer> => api.request('POST', `/v1/approvals/${id}/${verdict}`, body);
  /** Waits until the approval is final and its call, when it ran, has finished. */
  const settled = (id: string): Promise<ApprovalView> =>
    waitFor(async () => {
      const view = await approval(id, 5);
      return ['executed', 'denied', 'expired'].includes(view.state) ? view : undefined;
    }, `approval ${id} to settle`);

  before(async () => {
    installation = await TestInstallation.start();
    api = new HostileApi(installation);
    [held, other] = await Promise.all([api.createSession(HOLDING_CONTRACT), api.createSession(HOLDING_CONTRACT)]);
  });

  after(async () => {
    await installation?.destroy();
  });

  it('approving twice runs the call once; the second approval is refused', async () => {
    const id = await hold(held, 'twice');
    assert.equal((await decide(id, 'approve')).code, 'ok');
    const second = await decide(id, 'approve');
    assert.equal(second.code, 'APPROVAL_ALREADY_DECIDED', `${second.status} ${second.code}`);
    assert.equal((await settled(id)).state, 'executed');
    assert.equal(await runs(held, 'twice'), 1);
  });

  it('30 concurrent approvals: exactly one wins, the call runs exactly once, one decision is audited', async () => {
    const id = await hold(held, 'thirty');
    const answers = await Promise.all(Array.from({ length: 30 }, () => decide(id, 'approve')));
    const winners = answers.filter((answer) => answer.code === 'ok');
    assert.equal(winners.length, 1, `winners: ${answers.map((answer) => answer.code).join(' ')}`);
    for (const answer of answers.filter((entry) => entry.code !== 'ok')) assert.equal(answer.code, 'APPROVAL_ALREADY_DECIDED');
    assert.equal((await settled(id)).state, 'executed');
    assert.equal(await runs(held, 'thirty'), 1);
    const audit = await api.request('GET', `/v1/sessions/${held}/audit?limit=1000`);
    const records = ((audit.body['records'] as { type: string; data: Record<string, unknown> }[] | undefined) ?? (audit.body as unknown as { type: string; data: Record<string, unknown> }[])).filter((record) => record.data['approvalId'] === id);
    assert.equal(records.filter((record) => record.type === 'approval.granted').length, 1, 'one approval.granted in the audit');
  });

  it('a denied call cannot be approved afterwards and never runs', async () => {
    const id = await hold(held, 'denied');
    assert.equal((await decide(id, 'deny', { reason: 'no' })).code, 'ok');
    const late = await decide(id, 'approve');
    assert.equal(late.code, 'APPROVAL_ALREADY_DECIDED', `${late.status} ${late.code}`);
    assert.equal((await settled(id)).state, 'denied');
    assert.equal(await runs(held, 'denied'), 0);
  });

  it('an expired approval cannot be approved and the call never runs', async () => {
    const id = await hold(held, 'expired');
    // Time passes: the approval's deadline is moved into the past in the store, with the server stopped.
    await installation.stopServer();
    const db = new Database(`${installation.dataDir}/airlock.db`);
    const changed = db.prepare("UPDATE approvals SET record = json_set(record, '$.expiresAt', '2000-01-01T00:00:00.000Z') WHERE id = ?").run(id).changes;
    db.close();
    assert.equal(changed, 1, 'control: the approval\'s deadline was moved');
    await installation.startServer();
    const late = await decide(id, 'approve');
    assert.equal(late.code, 'APPROVAL_ALREADY_DECIDED', `${late.status} ${late.code} ${late.message}`);
    assert.match(late.message, /expired/);
    assert.equal((await approval(id)).state, 'expired');
    assert.equal(await runs(held, 'expired'), 0);
  });

  it('a decision with a malformed body is refused and decides nothing', async () => {
    const id = await hold(held, 'malformed');
    for (const body of [{ reason: 'r'.repeat(5000) }, { reason: 42 }, { verdict: 'approve' }]) {
      const answer = await decide(id, 'approve', body);
      assert.ok(answer.status >= 400 && answer.status < 500, `${JSON.stringify(body).slice(0, 40)}: ${answer.status} ${answer.code}`);
    }
    assert.equal((await approval(id)).state, 'pending', 'still pending');
    assert.equal(await runs(held, 'malformed'), 0);
    assert.equal((await decide(id, 'deny')).code, 'ok');
  });

  it('ids that are not approvals are not found: a session id, a call id, a path', async () => {
    const call = await api.tool(held, 'exec', { command: 'true' });
    for (const id of [held, String(call.body['callId']), '..%2F..%2Fsessions', 'apr_doesnotexist0000']) {
      const answer = await decide(id, 'approve');
      assert.ok(answer.status === 404 || answer.status === 400, `approve ${id}: ${answer.status} ${answer.code}`);
    }
  });

  it('a session\'s MCP endpoint does not hand out the outcome of another session\'s approval', async () => {
    const secret = needle('other-session-output');
    const answer = await api.tool(other, 'exec', { command: `tar --version >/dev/null && echo ${secret.halves.join('')}` });
    assert.equal(answer.status, 202);
    const id = String(answer.body['approvalId']);
    assert.equal((await decide(id, 'approve')).code, 'ok');
    assert.equal((await settled(id)).state, 'executed', 'control: the other session\'s call ran');
    const transport = new StreamableHTTPClientTransport(new URL(`${installation.url}/v1/sessions/${held}/mcp`), { requestInit: { headers: { authorization: `Bearer ${installation.token}` } } });
    const client = new Client({ name: 'hostile-approvals', version: '1.0.0' });
    await client.connect(transport);
    try {
      const result = await client.callTool({ name: 'await_approval', arguments: { approval_id: id, timeout: 2 } }).catch((error: unknown) => ({ isError: true, content: [{ type: 'text', text: String(error) }] }));
      const text = JSON.stringify(result);
      assert.ok(!text.includes(secret.value), `session ${held}'s MCP endpoint returned the output of ${other}'s call: ${text.slice(0, 300)}`);
      assert.equal((result as { isError?: boolean }).isError, true, 'the approval of another session is an error');
    } finally {
      await client.close();
    }
  });

  it('the decider recorded is the authenticated caller, not a name in the request body', async () => {
    const id = await hold(held, 'named');
    assert.equal((await decide(id, 'approve', { by: 'mallory-named-in-the-body' })).code, 'ok');
    const view = await settled(id);
    assert.notEqual(view.decidedBy, 'mallory-named-in-the-body', 'the approval records who decided, whatever the body says');
    assert.equal(view.decidedBy, 'token:admin', 'the decider is the installation token that authenticated');
  });

  it('a call approved just before the server is killed runs exactly once after the restart', async () => {
    const rounds: string[] = [];
    // Whether the kill lands before the call starts depends on timing: up to 6 tries for one that does.
    for (let round = 0; round < 6 && !rounds.includes('completed'); round++) {
      const file = `/workspace/edit-${round}.txt`;
      await api.write(held, file, 'count:');
      const answer = await api.tool(held, 'files.edit', { path: file, oldString: 'count:', newString: 'count:I' });
      assert.equal(answer.status, 202, `the edit was held: ${answer.status} ${answer.code}`);
      const id = String(answer.body['approvalId']);
      // Suspended, the machine needs a restore before the edit can start: the kill lands before it does.
      assert.equal((await api.request('POST', `/v1/sessions/${held}/suspend`)).code, 'ok');
      assert.equal((await decide(id, 'approve')).code, 'ok');
      await installation.crashServer();
      await installation.startServer();
      const view = await settled(id);
      const content = String((await api.tool(held, 'files.read', { path: file })).result['content']);
      const applied = (content.match(/I/g) ?? []).length;
      assert.ok(applied <= 1, `round ${round}: the edit ran ${applied} times (${content})`);
      if (view.outcome?.status === 'completed') assert.equal(applied, 1, `round ${round}: a completed edit ran once`);
      rounds.push(view.outcome?.status ?? view.state);
    }
    assert.ok(rounds.includes('completed'), `an approved call ran after the restart in one of the rounds: ${rounds.join(' ')}`);
  });
});
