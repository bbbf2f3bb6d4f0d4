/**
 * Prometheus metrics of one server (`GET /metrics`, `--metrics-listen`).
 * Counters and histograms are read off the audit records as they commit (the
 * same feed as the console's live streams), so that every figure agrees with
 * the audit; gauges (sessions by state, approvals waiting, the warm pool) are
 * read from the store when Prometheus scrapes. Label values are bounded: no
 * session, call or approval id ever becomes a label, tools are the fixed
 * tool names, and tenants appear only with `tenantLabels` on.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AuditRecord } from '../audit/audit-record.js';
import type { ApprovalRecord } from '../core/approval.js';
import type { Store } from '../core/store.js';
import { livenessOf } from '../core/cluster-node.js';
import { TOOL_NAMES } from '../core/tool-call.js';
import type { WarmPoolStatus } from '../core/warm-pool.js';

/** What the metrics read at scrape time. */
export interface MetricsSources {
  store: Store;
  /** the warm pool's figures, when the server keeps one */
  warmPool?: () => WarmPoolStatus;
  /** in a cluster: how long a node may go without a heartbeat before it is lost (undefined: no cluster) */
  nodeLeaseMs?: () => number | undefined;
  /** webhook endpoints by state (active, disabled), as the outbox last read them */
  webhookEndpoints?: () => Record<string, number>;
}

/** Options of the metrics. */
export interface AirlockMetricsOptions {
  /** label sessions and calls with their tenant's name (`--metrics-tenants`); off by default */
  tenantLabels?: boolean;
  /** also export the Node.js process metrics (CPU, memory, event loop, handles); on by default */
  processMetrics?: boolean;
}

/** A lifecycle operation timed from its first record to its last. */
interface TimedOperation {
  operation: string;
  outcome: 'ok' | 'failed';
}

/** Record types that start an operation, by the operation they start. */
export const OPERATION_STARTS: Readonly<Record<string, string>> = {
  'session.created': 'create',
  'session.resume-started': 'resume',
  'session.suspend-started': 'suspend',
  'session.restart-started': 'restart',
  'session.fork-started': 'fork',
  'session.terminate-started': 'terminate',
};

/** Record types that end an operation, with the operation and its outcome. */
export const OPERATION_ENDS: Readonly<Record<string, TimedOperation>> = {
  'session.started': { operation: 'create', outcome: 'ok' },
  'session.resumed': { operation: 'resume', outcome: 'ok' },
  'session.resume-failed': { operation: 'resume', outcome: 'failed' },
  'session.suspended': { operation: 'suspend', outcome: 'ok' },
  'session.suspend-failed': { operation: 'suspend', outcome: 'failed' },
  'session.restarted': { operation: 'restart', outcome: 'ok' },
  'session.restart-failed': { operation: 'restart', outcome: 'failed' },
  'session.fork-completed': { operation: 'fork', outcome: 'ok' },
  'session.terminated': { operation: 'terminate', outcome: 'ok' },
};

/** The policy decision a decision record stands for. */
const DECISIONS: Readonly<Record<string, string>> = {
  'tool-call.authorized': 'allow',
  'tool-call.denied': 'deny',
  'tool-call.held': 'ask',
  'tool-call.decided': 'shadow',
};

/** How a call ended, by the record that ends it. */
const CALL_OUTCOMES: Readonly<Record<string, string>> = {
  'tool-call.completed': 'completed',
  'tool-call.failed': 'failed',
  'tool-call.refused': 'refused',
  'tool-call.rejected': 'rejected',
};

/** Refusal codes counted as budget refusals. */
const BUDGET_CODES = new Set(['BUDGET_EXCEEDED', 'QUOTA_EXCEEDED']);

/** Operations still open are forgotten past this many (a server that missed their ends must not grow). */
const MAX_OPEN_OPERATIONS = 10_000;

/** Seconds: from a fast call to a slow cold start. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** Seconds a person takes to decide: up to the default approval timeout and past it. */
const DECISION_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 14_400, 86_400];

const KNOWN_TOOLS = new Set<string>(TOOL_NAMES);

/** The server's Prometheus registry and what feeds it. */
export class AirlockMetrics {
  readonly registry = new Registry();
  private readonly operations: Histogram<'operation' | 'outcome'>;
  private readonly decisions: Counter<'tool' | 'decision' | 'tenant'>;
  private readonly calls: Counter<'tool' | 'outcome' | 'tenant'>;
  private readonly callSeconds: Histogram<'tool' | 'phase'>;
  private readonly decisionSeconds: Histogram<'decision'>;
  private readonly guardTrips: Counter<string>;
  private readonly budgetRefusals: Counter<'code'>;
  private readonly egress: Counter<'outcome'>;
  private readonly auditAppends: Counter<'kind'>;
  private readonly webhookDeliveries: Counter<'outcome'>;
  private readonly opened = new Map<string, number>();
  /** session id → tenant, learned from session.created (only with tenant labels on) */
  private readonly tenants = new Map<string, string>();

  constructor(
    private readonly sources: MetricsSources,
    private readonly options: AirlockMetricsOptions = {},
  ) {
    const registers = [this.registry];
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'airlock_' });
    const { store } = sources;
    const tenantLabels = options.tenantLabels ?? false;
    new Gauge({
      name: 'airlock_sessions',
      help: 'Sessions by state and sandbox driver (read from the store at each scrape)',
      labelNames: tenantLabels ? ['state', 'driver', 'tenant'] : ['state', 'driver'],
      registers,
      async collect() {
        this.reset();
        for (const session of await store.listSessions()) {
          const labels = { state: session.state, driver: session.driver ?? 'gvisor' };
          this.inc(tenantLabels ? { ...labels, tenant: session.tenant } : labels);
        }
      },
    });
    new Gauge({
      name: 'airlock_approvals_pending',
      help: 'Approvals waiting for a person',
      registers,
      async collect() {
        this.set((await store.listApprovals({ states: ['pending'] })).length);
      },
    });
    new Gauge({
      name: 'airlock_approval_oldest_pending_seconds',
      help: 'Age of the approval that has waited longest for a person (0 when none waits)',
      registers,
      async collect() {
        const pending = await store.listApprovals({ states: ['pending'] });
        const oldest = Math.min(...pending.map((approval) => Date.parse(approval.createdAt)).filter(Number.isFinite));
        this.set(Number.isFinite(oldest) ? Math.max(0, (Date.now() - oldest) / 1000) : 0);
      },
    });
    const nodeLeaseMs = sources.nodeLeaseMs;
    new Gauge({
      name: 'airlock_cluster_nodes',
      help: 'Nodes of the cluster by liveness: active, draining, left, lost (no heartbeat within the lease); absent outside a cluster',
      labelNames: ['liveness'],
      registers,
      async collect() {
        this.reset();
        const leaseMs = nodeLeaseMs?.();
        if (leaseMs === undefined) return;
        const now = new Date();
        for (const liveness of ['active', 'draining', 'left', 'lost'] as const) this.set({ liveness }, 0);
        for (const node of await store.listNodes()) this.inc({ liveness: livenessOf(node, now, leaseMs) });
      },
    });
    const warmPool = sources.warmPool;
    new Gauge({
      name: 'airlock_warm_pool_machines',
      help: 'Machines kept started for new sessions, by class (driver and image) and state (ready, starting)',
      labelNames: ['driver', 'image', 'state'],
      registers,
      collect() {
        this.reset();
        for (const poolClass of warmPool?.().classes ?? []) {
          this.set({ driver: poolClass.driver, image: poolClass.imageName, state: 'ready' }, poolClass.ready);
          this.set({ driver: poolClass.driver, image: poolClass.imageName, state: 'starting' }, poolClass.starting);
        }
      },
    });
    new Gauge({
      name: 'airlock_warm_pool_claims',
      help: 'Creates that took a warm machine (hit) or found none (miss), by class, since the server started',
      labelNames: ['driver', 'image', 'result'],
      registers,
      collect() {
        this.reset();
        for (const poolClass of warmPool?.().classes ?? []) {
          this.set({ driver: poolClass.driver, image: poolClass.imageName, result: 'hit' }, poolClass.claims);
          this.set({ driver: poolClass.driver, image: poolClass.imageName, result: 'miss' }, poolClass.misses);
        }
      },
    });
    this.operations = new Histogram({
      name: 'airlock_session_operation_seconds',
      help: 'Session lifecycle operations (create, resume, suspend, restart, fork, terminate) from first to last record, by outcome',
      labelNames: ['operation', 'outcome'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.decisions = new Counter({
      name: 'airlock_tool_call_decisions_total',
      help: 'Policy decisions on tool calls: allow, deny, ask (held for a person), shadow (not enforced)',
      labelNames: options.tenantLabels ? ['tool', 'decision', 'tenant'] : ['tool', 'decision'],
      registers,
    });
    this.calls = new Counter({
      name: 'airlock_tool_calls_total',
      help: 'Tool calls by how they ended: completed, failed, refused (before any decision), rejected (an approval said no or expired)',
      labelNames: options.tenantLabels ? ['tool', 'outcome', 'tenant'] : ['tool', 'outcome'],
      registers,
    });
    this.callSeconds = new Histogram({
      name: 'airlock_tool_call_seconds',
      help: 'Time of completed tool calls by phase: queued (admission), resume (waking the machine), start, run (in the machine), total',
      labelNames: ['tool', 'phase'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.decisionSeconds = new Histogram({
      name: 'airlock_approval_decision_seconds',
      help: 'Time from an approval being requested to its decision, by decision (approved, denied, expired)',
      labelNames: ['decision'],
      buckets: DECISION_BUCKETS,
      registers,
    });
    this.webhookDeliveries = new Counter({
      name: 'airlock_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered, retried (will be tried again), failed (given up), disabled (the endpoint answered 410)',
      labelNames: ['outcome'],
      registers,
    });
    new Gauge({
      name: 'airlock_webhook_endpoints',
      help: 'Webhook endpoints by state: active, disabled',
      labelNames: ['state'],
      registers,
      collect() {
        this.reset();
        for (const [state, count] of Object.entries(sources.webhookEndpoints?.() ?? {})) this.set({ state }, count);
      },
    });
    this.guardTrips = new Counter({ name: 'airlock_runaway_guard_trips_total', help: 'Sessions stopped by the runaway guard', registers });
    this.budgetRefusals = new Counter({
      name: 'airlock_budget_refusals_total',
      help: 'Tool calls refused by a budget or a quota, by error code',
      labelNames: ['code'],
      registers,
    });
    this.egress = new Counter({
      name: 'airlock_egress_connections_total',
      help: 'Outbound connections from sandboxes through the egress gateway, allowed or refused',
      labelNames: ['outcome'],
      registers,
    });
    this.auditAppends = new Counter({
      name: 'airlock_audit_records_total',
      help: 'Audit records committed, by kind (the noun of their type: session, tool-call, approval, network, ...)',
      labelNames: ['kind'],
      registers,
    });
  }

  /** Counts one committed audit record. Never throws: it runs on the feed's stack. */
  recordAudit(record: AuditRecord): void {
    const [noun] = record.type.split('.', 1);
    this.auditAppends.inc({ kind: boundedKind(noun ?? '') });
    if (record.type === 'session.created' && this.options.tenantLabels) this.rememberTenant(record);
    this.timeOperation(record);
    const data = record.data;
    const tool = boundedTool(data['gen_ai.tool.name']);
    const decision = DECISIONS[record.type];
    if (decision !== undefined) this.withTenant({ tool, decision }, record.sessionId, (labels) => this.decisions.inc(labels));
    const outcome = CALL_OUTCOMES[record.type];
    if (outcome !== undefined) {
      this.withTenant({ tool, outcome }, record.sessionId, (labels) => this.calls.inc(labels));
      const code = data['code'];
      if (outcome === 'refused' && typeof code === 'string' && BUDGET_CODES.has(code)) this.budgetRefusals.inc({ code });
    }
    if (record.type === 'tool-call.completed') this.timeCall(tool, data['timing']);
    if (record.type === 'guard.tripped') this.guardTrips.inc();
    if (record.type === 'network.connected') this.egress.inc({ outcome: 'allowed' });
    if (record.type === 'network.denied') this.egress.inc({ outcome: 'refused' });
    if (record.type === 'session.terminated') this.tenants.delete(record.sessionId);
  }

  /** Counts one webhook delivery attempt. */
  recordWebhookAttempt(outcome: 'delivered' | 'retried' | 'failed' | 'disabled'): void {
    this.webhookDeliveries.inc({ outcome });
  }

  /** Times a decided approval. */
  recordApproval(approval: ApprovalRecord): void {
    if (approval.state === 'pending' || approval.decidedAt === null) return;
    const seconds = (Date.parse(approval.decidedAt) - Date.parse(approval.createdAt)) / 1000;
    if (Number.isFinite(seconds) && seconds >= 0) this.decisionSeconds.observe({ decision: approval.state }, seconds);
  }

  /** The exposition text and its content type. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private timeOperation(record: AuditRecord): void {
    const at = Date.parse(record.at);
    const started = OPERATION_STARTS[record.type];
    if (started !== undefined) {
      if (this.opened.size >= MAX_OPEN_OPERATIONS) this.opened.clear();
      this.opened.set(`${record.sessionId} ${started}`, at);
      return;
    }
    const failedOperation = record.type === 'session.failed' ? record.data['operation'] : undefined;
    const ended = typeof failedOperation === 'string' ? { operation: failedOperation, outcome: 'failed' as const } : OPERATION_ENDS[record.type];
    if (ended === undefined) return;
    const key = `${record.sessionId} ${ended.operation}`;
    const began = this.opened.get(key);
    if (began === undefined) return;
    this.opened.delete(key);
    this.operations.observe(ended, Math.max(0, (at - began) / 1000));
  }

  private timeCall(tool: string, timing: unknown): void {
    if (!timing || typeof timing !== 'object') return;
    const phases = timing as Record<string, unknown>;
    for (const [phase, key] of [
      ['queued', 'queuedMs'],
      ['resume', 'resumeMs'],
      ['start', 'startMs'],
      ['run', 'runMs'],
      ['total', 'totalMs'],
    ] as const) {
      const milliseconds = phases[key];
      if (typeof milliseconds === 'number' && Number.isFinite(milliseconds) && milliseconds >= 0)
        this.callSeconds.observe({ tool, phase }, milliseconds / 1000);
    }
  }

  private rememberTenant(record: AuditRecord): void {
    const tenant = record.data['tenant'];
    if (typeof tenant === 'string') this.remember(record.sessionId, tenant);
  }

  private remember(sessionId: string, tenant: string): void {
    if (this.tenants.size >= MAX_OPEN_OPERATIONS) this.tenants.clear();
    this.tenants.set(sessionId, tenant);
  }

  /**
   * Counts with the session's tenant as a label when tenant labels are on. A session this server has not
   * seen created (made before it started, or by another node) is looked up once; the count lands then.
   */
  private withTenant<T extends Record<string, string>>(labels: T, sessionId: string, count: (labels: T) => void): void {
    if (!this.options.tenantLabels) return count(labels);
    const known = this.tenants.get(sessionId);
    if (known !== undefined) return count({ ...labels, tenant: known });
    this.sources.store
      .getSession(sessionId)
      .then((session) => {
        if (session) this.remember(sessionId, session.tenant);
        count({ ...labels, tenant: session?.tenant ?? 'unknown' });
      })
      .catch(() => count({ ...labels, tenant: 'unknown' }));
  }
}

/** A tool name as a label: one of the fixed tools, else `other`. */
function boundedTool(value: unknown): string {
  return typeof value === 'string' && KNOWN_TOOLS.has(value) ? value : 'other';
}

/** An audit noun as a label: short lowercase words only, else `other`. */
function boundedKind(noun: string): string {
  return /^[a-z][a-z-]{0,23}$/.test(noun) ? noun : 'other';
}
