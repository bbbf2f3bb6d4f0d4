/**
 * deploy/kubernetes/monitoring/ and deploy/grafana/ checked offline: the alert
 * rules pass `promtool check rules` (Debian's prometheus package) and fire in
 * `promtool test rules` on the series that should fire them, not before; every
 * metric a rule or a dashboard panel names is one the server exports.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { AirlockMetrics } from '../../../src/telemetry/airlock-metrics.js';
import type { Store } from '../../../src/core/store.js';

const ROOT = fileURLToPath(new URL('../../../../../../', import.meta.url));
const MONITORING = join(ROOT, 'deploy', 'kubernetes', 'monitoring');
const DASHBOARD = join(ROOT, 'deploy', 'grafana', 'airlock-dashboard.json');
const hasPromtool = spawnSync('promtool', ['--version']).status === 0;
const NO_PROMTOOL = hasPromtool ? false : 'promtool (Debian package prometheus) is not installed; scripts/setup.sh installs it';

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
type RuleGroups = { name: string; rules: Rule[] }[];

function ruleGroups(): RuleGroups {
  const [document] = parseAllDocuments(readFileSync(join(MONITORING, 'prometheus-rule.yaml'), 'utf8'));
  const rule = document?.toJSON() as { kind: string; spec: { groups: RuleGroups } };
  assert.equal(rule.kind, 'PrometheusRule');
  return rule.spec.groups;
}

function promtool(args: string[], files: Record<string, string>): { status: number | null; output: string } {
  const dir = mkdtempSync('/var/tmp/airlock-promtool-');
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const run = spawnSync('promtool', args, { cwd: dir, encoding: 'utf8' });
    return { status: run.status, output: `${run.stdout}${run.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every metric name the server registers, with the series names of its histograms. */
function exportedNames(): Set<string> {
  const store = { listSessions: async () => [], listApprovals: async () => [], listNodes: async () => [] } as unknown as Store;
  const metrics = new AirlockMetrics({ store }, { processMetrics: true });
  const names = new Set<string>(['up']);
  for (const metric of metrics.registry.getMetricsAsArray()) {
    const { name } = metric as unknown as { name: string };
    names.add(name);
    for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

/** The metric names an expression reads (identifiers followed by `{`, `[` or standing alone, minus PromQL's own words). */
function namesIn(expression: string): string[] {
  const words = new Set(['max', 'min', 'sum', 'by', 'rate', 'increase', 'histogram_quantile', 'le', 'without', 'on', 'and', 'or', 'unless']);
  const withoutStrings = expression
    .replace(/"[^"]*"/g, '""')
    .replace(/\{[^}]*\}/g, '{}')
    .replace(/\[[^\]]*\]/g, '[]');
  return [...withoutStrings.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)]
    .map((match) => match[0])
    .filter((word) => !words.has(word) && (word.includes('_') || word === 'up'));
}

describe('monitoring (deploy/kubernetes/monitoring, deploy/grafana)', () => {
  it('the alert rules pass promtool check rules', { skip: NO_PROMTOOL }, () => {
    const checked = promtool(['check', 'rules', 'rules.yaml'], { 'rules.yaml': stringify({ groups: ruleGroups() }) });
    assert.equal(checked.status, 0, checked.output);
    assert.match(checked.output, /SUCCESS: \d+ rules found/);
  });

  it('each alert fires on the series that should fire it, and not on quiet ones', { skip: NO_PROMTOOL }, () => {
    // Annotations are templates of $value: the test compares alerts by their labels only.
    const groups = ruleGroups().map((group) => ({ ...group, rules: group.rules.map(({ annotations: _annotations, ...rule }) => rule) }));
    const firing = (alertname: string, severity: string) => ({ eval_time: '20m', alertname, exp_alerts: [{ exp_labels: { severity } }] });
    const quiet = (alertname: string) => ({ eval_time: '20m', alertname, exp_alerts: [] });
    const tests = {
      rule_files: ['rules.yaml'],
      evaluation_interval: '1m',
      tests: [
        {
          interval: '1m',
          input_series: [
            { series: 'airlock_session_operation_seconds_count{operation="create",outcome="failed",instance="a"}', values: '0+1x30' },
            { series: 'airlock_approval_oldest_pending_seconds{instance="a"}', values: '0+60x30' },
            { series: 'airlock_cluster_nodes{liveness="lost",instance="a"}', values: '0 1x30' },
            { series: 'airlock_runaway_guard_trips_total{instance="a"}', values: '0+1x30' },
            { series: 'up{job="airlock",instance="a"}', values: '0x30' },
            { series: 'airlock_webhook_deliveries_total{outcome="retried",instance="a"}', values: '0+1x30' },
          ],
          alert_rule_test: [
            firing('AirlockCreatesFailing', 'warning'),
            firing('AirlockApprovalWaitingTooLong', 'warning'),
            { ...firing('AirlockNodeLost', 'critical') },
            firing('AirlockRunawayGuardTripping', 'info'),
            firing('AirlockWebhookFailing', 'warning'),
            { eval_time: '20m', alertname: 'AirlockDown', exp_alerts: [{ exp_labels: { severity: 'critical', job: 'airlock', instance: 'a' } }] },
          ],
        },
        {
          interval: '1m',
          input_series: [
            { series: 'airlock_session_operation_seconds_count{operation="create",outcome="failed",instance="a"}', values: '0x30' },
            { series: 'airlock_session_operation_seconds_count{operation="create",outcome="ok",instance="a"}', values: '0+5x30' },
            { series: 'airlock_approval_oldest_pending_seconds{instance="a"}', values: '0+10x30' },
            { series: 'airlock_cluster_nodes{liveness="lost",instance="a"}', values: '0x30' },
            { series: 'airlock_cluster_nodes{liveness="active",instance="a"}', values: '3x30' },
            { series: 'airlock_runaway_guard_trips_total{instance="a"}', values: '0x30' },
            { series: 'up{job="airlock",instance="a"}', values: '1x30' },
            { series: 'airlock_webhook_deliveries_total{outcome="delivered",instance="a"}', values: '0+5x30' },
            { series: 'airlock_webhook_deliveries_total{outcome="retried",instance="a"}', values: '0x30' },
          ],
          alert_rule_test: [
            'AirlockCreatesFailing',
            'AirlockApprovalWaitingTooLong',
            'AirlockNodeLost',
            'AirlockRunawayGuardTripping',
            'AirlockDown',
            'AirlockWebhookFailing',
          ].map(quiet),
        },
      ],
    };
    const tested = promtool(['test', 'rules', 'tests.yaml'], { 'rules.yaml': stringify({ groups }), 'tests.yaml': stringify(tests) });
    assert.equal(tested.status, 0, tested.output);
  });

  it('every metric a rule or a dashboard panel reads is one the server exports', () => {
    const exported = exportedNames();
    assert.ok(exported.has('airlock_tool_call_decisions_total') && exported.has('airlock_session_operation_seconds_bucket'));
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
    assert.ok(dashboard.panels.length >= 10);
    const expressions = [
      ...ruleGroups().flatMap((group) => group.rules.map((rule) => ({ where: `alert ${rule.alert}`, expr: rule.expr }))),
      ...dashboard.panels.flatMap((panel) => panel.targets.map((target) => ({ where: `panel ${panel.title}`, expr: target.expr }))),
    ];
    for (const { where, expr } of expressions) {
      const names = namesIn(expr);
      assert.ok(names.length > 0, `${where} reads no metric: ${expr}`);
      for (const name of names) assert.ok(exported.has(name), `${where} reads ${name}, which the server does not export`);
    }
  });

  it('the ServiceMonitor scrapes the port the nodes name metrics', () => {
    const [document] = parseAllDocuments(readFileSync(join(MONITORING, 'servicemonitor.yaml'), 'utf8'));
    const monitor = document?.toJSON() as { kind: string; spec: { endpoints: { port: string; path: string }[] } };
    assert.equal(monitor.kind, 'ServiceMonitor');
    const services = parseAllDocuments(readFileSync(join(ROOT, 'deploy', 'kubernetes', 'service.yaml'), 'utf8')).map(
      (service) => service.toJSON() as { spec: { ports: { name: string }[] } },
    );
    const daemonSet = readFileSync(join(ROOT, 'deploy', 'kubernetes', 'daemonset.yaml'), 'utf8');
    for (const endpoint of monitor.spec.endpoints) {
      assert.equal(endpoint.path, '/metrics');
      assert.ok(
        services.some((service) => service.spec.ports.some((port) => port.name === endpoint.port)),
        `a Service names port ${endpoint.port}`,
      );
      assert.match(daemonSet, new RegExp(`name: ${endpoint.port}\\n\\s+containerPort: 9464`));
    }
    assert.match(daemonSet, /"--metrics-listen", "0\.0\.0\.0:9464"/);
  });
});
