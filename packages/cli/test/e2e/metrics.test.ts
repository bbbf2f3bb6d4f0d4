/**
 * Issue 24's metrics and logs, end to end: a real Prometheus (Debian's `prometheus`)
 * scrapes a real `airlock serve --metrics-listen`, and its HTTP API reads back
 * the creates, the calls by decision and an approval waiting. The same
 * figures on the API listener need an admin or a `metrics` token. The same
 * server's log is one JSON line per request and lifecycle event, and never
 * carries a token, a secret or an environment value it was sent.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TestInstallation, freePort, type CliResult } from '../support/test-installation.js';

const CONTRACT = fileURLToPath(new URL('../../../../../examples/contracts/no-rm-approve-tar.json', import.meta.url));
const PROMETHEUS = '/usr/bin/prometheus';
const hasPrometheus = spawnSync(PROMETHEUS, ['--version']).status === 0;

/** Polls until `probe` gives a value (a condition, not a time). */
async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe('Prometheus scrapes airlock serve', { skip: hasPrometheus ? false : 'Debian package prometheus not installed (scripts/setup.sh installs it)' }, () => {
  let installation: TestInstallation;
  let prometheus: ChildProcess | undefined;
  let prometheusLog = '';
  let prometheusUrl = '';
  let metricsPort = 0;
  let promDir = '';
  let sessionId = '';
  let held: Promise<CliResult> | undefined;

  before(async () => {
    metricsPort = await freePort();
    installation = await TestInstallation.start({ serveArgs: ['--metrics-listen', `127.0.0.1:${metricsPort}`] });
    promDir = mkdtempSync('/var/tmp/airlock-prometheus-');
    writeFileSync(
      join(promDir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 1s',
        'scrape_configs:',
        '  - job_name: airlock',
        '    static_configs:',
        `      - targets: ['127.0.0.1:${metricsPort}']`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    prometheusUrl = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      PROMETHEUS,
      [`--config.file=${join(promDir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(promDir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prometheus.stdout?.on('data', (chunk: Buffer) => (prometheusLog += chunk.toString()));
    prometheus.stderr?.on('data', (chunk: Buffer) => (prometheusLog += chunk.toString()));
  });
  after(async () => {
    prometheus?.kill('SIGTERM');
    if (prometheus && prometheus.exitCode === null) await new Promise((resolve) => prometheus?.once('exit', resolve));
    await installation?.destroy();
    if (promDir) rmSync(promDir, { recursive: true, force: true });
  });

  /** One instant query through Prometheus' HTTP API: the summed value, undefined while no sample exists. */
  const query = async (expression: string): Promise<number | undefined> => {
    const response = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(expression)}`);
    const body = (await response.json()) as { status: string; data: { result: { value: [number, string] }[] } };
    assert.equal(body.status, 'success', JSON.stringify(body));
    const first = body.data.result[0];
    return first === undefined ? undefined : Number(first.value[1]);
  };
  const atLeast = (expression: string, minimum: number) =>
    waitFor(
      async () => {
        const value = await query(expression);
        return value !== undefined && value >= minimum ? value : undefined;
      },
      `${expression} >= ${minimum} in Prometheus (its log: ${prometheusLog.slice(-500)})`,
    );

  it('reads back creates, calls by decision and an approval waiting', async () => {
    const created = installation.cli(['sessions', 'create', '--contract', CONTRACT]);
    assert.equal(created.code, 0, created.stderr);
    sessionId = created.stdout.trim();
    assert.equal(installation.cli(['exec', sessionId, '--', 'sh', '-c', 'echo allowed']).code, 0);
    assert.equal(installation.cli(['exec', sessionId, '--', 'sh', '-c', 'rm -f /workspace/x']).code, 126);
    held = installation.cliAsync(['exec', sessionId, '--', 'sh', '-c', 'tar cf /workspace/a.tar -C /workspace .']);

    await atLeast('up{job="airlock"}', 1);
    assert.ok((await atLeast('sum(airlock_session_operation_seconds_count{operation="create",outcome="ok"})', 1)) >= 1);
    await atLeast('sum(airlock_tool_call_decisions_total{tool="exec",decision="allow"})', 1);
    await atLeast('sum(airlock_tool_call_decisions_total{tool="exec",decision="deny"})', 1);
    await atLeast('sum(airlock_tool_call_decisions_total{tool="exec",decision="ask"})', 1);
    await atLeast('airlock_approvals_pending', 1);
    await atLeast('sum(airlock_sessions{state="running"})', 1);
    await atLeast('sum(airlock_tool_call_seconds_count{tool="exec",phase="total"})', 1);
  });

  it('answers the held call once denied, and the pending approval leaves the gauge', async () => {
    const pending = JSON.parse(installation.cli(['approvals', 'ls', '--json']).stdout) as { id: string; sessionId: string }[];
    const approval = pending.find((candidate) => candidate.sessionId === sessionId);
    assert.ok(approval, 'the tar call waits for a person');
    assert.equal(installation.cli(['approvals', 'deny', approval.id, '--reason', 'not now']).code, 0);
    assert.notEqual((await held)?.code, 0);
    await waitFor(async () => ((await query('airlock_approvals_pending')) === 0 ? true : undefined), 'no approval pending');
    await atLeast('sum(airlock_approval_decision_seconds_count{decision="denied"})', 1);
  });

  it('on the API listener, /metrics needs an admin or a metrics token', async () => {
    const get = (token?: string) => fetch(`${installation.url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    assert.equal((await get()).status, 401);
    const tokenOf = (role: string): string => {
      const made = installation.cli(['tokens', 'create', '--tenant', 'default', '--role', role, '--name', `${role}-reader`, '--json']);
      assert.equal(made.code, 0, made.stderr);
      return (JSON.parse(made.stdout) as { token: string }).token;
    };
    const metricsToken = tokenOf('metrics');
    const agentToken = tokenOf('agent');
    const admin = await get(installation.token);
    assert.equal(admin.status, 200);
    assert.match(admin.headers.get('content-type') ?? '', /^text\/plain/);
    assert.match(await admin.text(), /^airlock_tool_call_decisions_total\{tool="exec",decision="deny"\} [1-9]/m);
    const reader = await get(metricsToken);
    assert.equal(reader.status, 200);
    assert.doesNotMatch(await reader.text(), new RegExp(sessionId), 'no session id is a label');
    assert.equal((await get(agentToken)).status, 403);
    const sessions = await fetch(`${installation.url}/v1/sessions`, { headers: { authorization: `Bearer ${metricsToken}` } });
    assert.equal(sessions.status, 403, 'a metrics token reads figures, not sessions');
    const other = await fetch(`http://127.0.0.1:${metricsPort}/v1/sessions`);
    assert.equal(other.status, 404, 'the metrics listener serves /metrics only');
  });

  it('logs one JSON line per request and lifecycle event, and no token, secret or environment value', async () => {
    const secretValue = `secret-value-${Math.random().toString(36).slice(2)}`;
    const envValue = `env-value-${Math.random().toString(36).slice(2)}`;
    const stored = installation.cli(['secrets', 'set', 'LOG_PROBE', '--tenant', 'default'], { input: secretValue });
    assert.equal(stored.code, 0, stored.stderr);
    const made = installation.cli(['tokens', 'create', '--tenant', 'acme', '--role', 'agent', '--name', 'log-probe', '--json']);
    const minted = (JSON.parse(made.stdout) as { token: string }).token;
    const ran = installation.cli(['exec', sessionId, '--env', `PROBE=${envValue}`, '--', 'sh', '-c', 'echo "$PROBE" > /dev/null'], {
      env: { ...installation.env, AIRLOCK_TOKEN: minted },
    });
    assert.equal(ran.code, 0, ran.stderr);
    const refused = await fetch(`${installation.url}/v1/sessions?token=${secretValue}`, { headers: { authorization: `Bearer ${envValue}` } });
    assert.equal(refused.status, 401);
    const requestId = refused.headers.get('x-request-id');
    assert.ok(requestId, 'every response names its request id');

    const lines = await waitFor(async () => {
      const parsed = installation.serverLog
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      return parsed.some((line) => line['requestId'] === requestId) ? parsed : undefined;
    }, 'the refused request in the log');
    const exec = lines.find((line) => line['event'] === 'http.request' && line['route'] === '/v1/sessions/:id/exec' && line['token'] === 'log-probe');
    assert.ok(exec, 'the exec call is logged with its token name');
    assert.equal(exec['sessionId'], sessionId);
    assert.equal(exec['status'], 200);
    assert.equal(exec['method'], 'POST');
    assert.equal(typeof exec['durationMs'], 'number');
    const unauthenticated = lines.find((line) => line['requestId'] === requestId);
    assert.equal(unauthenticated?.['status'], 401);
    assert.ok(
      lines.some((line) => line['event'] === 'session.started' && line['sessionId'] === sessionId),
      'lifecycle events are logged',
    );
    assert.ok(
      lines.some((line) => line['event'] === 'approval.denied' && line['sessionId'] === sessionId),
      'approvals are logged',
    );
    // `airlock serve` prints its own token at start-up, on stderr, for the operator: the JSON lines never carry it.
    const jsonLines = installation.serverLog
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .join('\n');
    for (const [what, value] of [
      ['the secret', secretValue],
      ['the environment value', envValue],
      ['the minted token', minted],
      ["the installation's token", installation.token],
    ] as const) {
      assert.ok(!jsonLines.includes(value), `${what} appears in the server's log`);
    }
    for (const value of [secretValue, envValue, minted]) assert.ok(!installation.serverLog.includes(value), 'nor on stderr');
  });
});
