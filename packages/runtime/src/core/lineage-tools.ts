/**
 * The `snapshot` and `fork` tools: an agent saving or branching its own
 * session as a tool call, authorized, held for approval and audited like any
 * other. The work is the snapshot and fork services'; this shapes their
 * records into tool results.
 */
import type { ForkService } from './fork-service.js';
import type { SnapshotService } from './snapshot-service.js';
import type { SessionRecord } from './session.js';
import type { ToolArguments } from './tool-schemas.js';
import { snapshotView } from './snapshot.js';

/** Runs the lineage tools of sessions. */
export class LineageTools {
  constructor(
    private readonly snapshots: SnapshotService,
    private readonly forks: ForkService,
  ) {}

  /** Snapshots the session as it is now (running, paused or suspended); the result is the snapshot's public view. */
  async snapshot(session: SessionRecord, args: ToolArguments<'snapshot'>): Promise<Record<string, unknown>> {
    return snapshotView(await this.snapshots.capture(session.id, { name: args.name ?? null }));
  }

  /**
   * Forks the session (now, or from one of its snapshots) into `count`
   * branches. The result lists every branch, created or failed, and counts
   * the failures so that a partial fork is seen as one.
   */
  async fork(session: SessionRecord, args: ToolArguments<'fork'>): Promise<{ result: Record<string, unknown>; failed: boolean }> {
    const source = args.snapshotId === undefined ? { sessionId: session.id } : { sessionId: session.id, snapshotId: args.snapshotId };
    const { snapshot, branches } = await this.forks.fork(source, args.count);
    const listed = branches.map((branch) =>
      branch.ok
        ? { index: branch.index, sessionId: branch.session.id, state: branch.session.state }
        : { index: branch.index, sessionId: branch.sessionId, error: { code: branch.error.code, message: branch.error.message } },
    );
    const failures = branches.filter((branch) => !branch.ok).length;
    return { result: { snapshot: snapshotView(snapshot), branches: listed, created: branches.length - failures, failed: failures }, failed: failures > 0 };
  }
}
