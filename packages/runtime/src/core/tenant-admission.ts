/**
 * Per-tenant quotas at the door (issue 12, item 7): sessions, tool calls in
 * flight, fork branches and fork depth. A request over a quota is refused
 * with QUOTA_EXCEEDED (429) before anything is made or run. Session room is
 * reserved under a per-tenant lock (count, then reserve), so concurrent
 * creates cannot overshoot on one server; calls in flight are counted per
 * server (docs/security.md says so).
 */
import { AirlockError } from './errors.js';
import type { SessionRecord } from './session.js';
import type { StoreReader } from './store.js';
import type { TenantQuotas } from './tenancy.js';

/** A reservation: call it once the work it admitted is over. */
export type Release = () => void;

/** Deep fork chains stop being walked here (a guard against a corrupt lineage loop). */
const MAX_LINEAGE_WALK = 1000;

/** Admits work of tenants against their quotas. */
export class TenantAdmission {
  private readonly reservedSessions = new Map<string, number>();
  private readonly callsInFlight = new Map<string, number>();
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: StoreReader,
    private readonly quotasOf: (tenant: string) => Promise<TenantQuotas>,
  ) {}

  /** Reserves room for `count` new sessions of `tenant` (a create, or a fork's branches). */
  async reserveSessions(tenant: string, count: number): Promise<Release> {
    const { maxSessions } = await this.quotasOf(tenant);
    if (maxSessions === null) return () => undefined;
    return this.serialized(tenant, async () => {
      const live = (await this.store.listSessions({ tenant })).filter((session) => session.state !== 'terminated').length;
      const reserved = this.reservedSessions.get(tenant) ?? 0;
      if (live + reserved + count > maxSessions) {
        throw quotaExceeded(
          tenant,
          'maxSessions',
          maxSessions,
          `tenant ${tenant} may have ${maxSessions} sessions that are not terminated; it has ${live + reserved}${count > 1 ? ` and asked for ${count} more` : ''}. Terminate some (\`airlock sessions rm ID\`) or ask an admin to raise it (\`airlock tenants set ${tenant} --max-sessions N\`)`,
        );
      }
      this.reservedSessions.set(tenant, reserved + count);
      return once(() => this.reservedSessions.set(tenant, (this.reservedSessions.get(tenant) ?? count) - count));
    });
  }

  /** Takes one of the tenant's call slots on this server. */
  async enterCall(tenant: string): Promise<Release> {
    const { maxConcurrentCalls } = await this.quotasOf(tenant);
    const inFlight = this.callsInFlight.get(tenant) ?? 0;
    if (maxConcurrentCalls !== null && inFlight >= maxConcurrentCalls) {
      throw quotaExceeded(
        tenant,
        'maxConcurrentCalls',
        maxConcurrentCalls,
        `tenant ${tenant} may have ${maxConcurrentCalls} tool calls in flight at once and has ${inFlight}; retry when one ends, or ask an admin to raise it (\`airlock tenants set ${tenant} --max-concurrent-calls N\`)`,
      );
    }
    this.callsInFlight.set(tenant, inFlight + 1);
    return once(() => {
      const left = (this.callsInFlight.get(tenant) ?? 1) - 1;
      if (left > 0) this.callsInFlight.set(tenant, left);
      else this.callsInFlight.delete(tenant);
    });
  }

  /** Checks a fork of `session` into `count` branches against its tenant's branch and depth quotas. */
  async checkFork(session: SessionRecord, count: number): Promise<void> {
    const { maxForkBranches, maxForkDepth } = await this.quotasOf(session.tenant);
    if (maxForkBranches !== null && count > maxForkBranches) {
      throw quotaExceeded(
        session.tenant,
        'maxForkBranches',
        maxForkBranches,
        `tenant ${session.tenant} may fork into at most ${maxForkBranches} branches at once (asked ${count}); fork fewer, or ask an admin (\`airlock tenants set ${session.tenant} --max-fork-branches N\`)`,
      );
    }
    if (maxForkDepth !== null) {
      const depth = (await this.depthOf(session)) + 1;
      if (depth > maxForkDepth) {
        throw quotaExceeded(
          session.tenant,
          'maxForkDepth',
          maxForkDepth,
          `a fork of session ${session.id} would be ${depth} forks deep, and tenant ${session.tenant} allows ${maxForkDepth}; fork an earlier generation, or ask an admin (\`airlock tenants set ${session.tenant} --max-fork-depth N\`)`,
        );
      }
    }
  }

  /** How many forks lie between the session and a session made without a fork. */
  async depthOf(session: SessionRecord): Promise<number> {
    let depth = 0;
    let current: SessionRecord | undefined = session;
    while (current?.lineage && depth < MAX_LINEAGE_WALK) {
      depth += 1;
      current = await this.store.getSession(current.lineage.parentSessionId);
    }
    return depth;
  }

  /** Runs `work` after every earlier work of the same tenant ended. */
  private serialized<T>(tenant: string, work: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(tenant) ?? Promise.resolve();
    const run = previous.then(work, work);
    const settled = run.catch(() => undefined);
    this.locks.set(tenant, settled);
    void settled.then(() => {
      if (this.locks.get(tenant) === settled) this.locks.delete(tenant);
    });
    return run;
  }
}

function quotaExceeded(tenant: string, quota: keyof TenantQuotas, limit: number, message: string): AirlockError {
  return new AirlockError('QUOTA_EXCEEDED', message, { details: { tenant, quota, limit } });
}

function once(release: () => void): Release {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    release();
  };
}
