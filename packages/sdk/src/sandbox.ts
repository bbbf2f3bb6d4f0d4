/**
 * `Sandbox`: one Airlock session, composed of `commands`, `files`,
 * `approvals`, `desktop` and `pty`, with lifecycle methods. Created with `Sandbox.create()` or
 * attached with `Sandbox.connect(id)`.
 */
import { Connection, type ConnectionOptions } from './connection.js';
import { Commands } from './commands.js';
import { Files } from './files.js';
import { Approvals } from './approvals.js';
import { Snapshots } from './snapshots.js';
import { ForkError } from './errors.js';
import { Ports } from './ports.js';
import { Desktop } from './desktop.js';
import { Pty } from './pty.js';
import type { AuditRecord, AuditVerification, ForkBranchFailure, ForkResult, SessionInfo } from './types.js';

/** Options of `Sandbox.create`. */
export interface SandboxCreateOptions extends ConnectionOptions {
  /** image name (default: the server's default, debian-bookworm) */
  image?: string;
  /** session contract: an object, or JSON/YAML text */
  contract?: unknown;
  mode?: 'machine' | 'per-call';
  /** sandbox driver: `gvisor` (default) or `microvm`, a VM with its own guest kernel */
  sandbox?: string;
  idleTimeoutSeconds?: number;
}

/** One session. */
export class Sandbox {
  readonly commands: Commands;
  readonly files: Files;
  readonly approvals: Approvals;
  readonly snapshots: Snapshots;
  readonly ports: Ports;
  /** screen and input of a desktop session (`image: 'debian-bookworm-desktop'`) */
  readonly desktop: Desktop;
  /** a takeover terminal: a shell in the machine, the agent's calls held while it is open */
  readonly pty: Pty;

  private constructor(
    private readonly connection: Connection,
    /** the last state fetched from the server */
    public info: SessionInfo,
  ) {
    this.approvals = new Approvals(connection, info.id);
    this.commands = new Commands(connection, info.id, this.approvals);
    this.files = new Files(connection, info.id, this.approvals);
    this.snapshots = new Snapshots(connection, info.id);
    this.ports = new Ports(connection, info.id);
    this.desktop = new Desktop(connection, info.id, this.approvals);
    this.pty = new Pty(connection, info.id);
  }

  /** The session id. */
  get id(): string {
    return this.info.id;
  }

  /** Creates a session and starts its machine. */
  static async create(options: SandboxCreateOptions = {}): Promise<Sandbox> {
    const connection = new Connection(options);
    const body: Record<string, unknown> = {};
    if (options.image !== undefined) body['image'] = options.image;
    if (options.contract !== undefined) body['contract'] = options.contract;
    if (options.mode !== undefined) body['mode'] = options.mode;
    if (options.sandbox !== undefined) body['sandbox'] = options.sandbox;
    if (options.idleTimeoutSeconds !== undefined) body['idleTimeoutSeconds'] = options.idleTimeoutSeconds;
    const { body: info } = await connection.json<SessionInfo>('POST', '/v1/sessions', body);
    return new Sandbox(connection, info);
  }

  /** Attaches to an existing session. */
  static async connect(id: string, options: ConnectionOptions = {}): Promise<Sandbox> {
    const connection = new Connection(options);
    const { body: info } = await connection.json<SessionInfo>('GET', `/v1/sessions/${encodeURIComponent(id)}`);
    return new Sandbox(connection, info);
  }

  /** All sessions on the server. */
  static async list(options: ConnectionOptions = {}): Promise<SessionInfo[]> {
    const connection = new Connection(options);
    return (await connection.json<{ sessions: SessionInfo[] }>('GET', '/v1/sessions')).body.sessions;
  }

  /** Fetches the current state and meters. */
  async getInfo(): Promise<SessionInfo> {
    this.info = (await this.connection.json<SessionInfo>('GET', this.path(''))).body;
    return this.info;
  }

  /** Checkpoints memory and processes and stops the machine (no CPU or RAM held). */
  async suspend(): Promise<SessionInfo> {
    return this.lifecycle('POST', '/suspend');
  }

  /** Restores the machine where it stopped (calls also wake it on their own). */
  async resume(): Promise<SessionInfo> {
    return this.lifecycle('POST', '/resume');
  }

  /**
   * Replaces the machine by a fresh one on the same disk: for a session whose machine stopped
   * answering (`degraded`) or died (`failed`). Files are kept; processes and memory are lost.
   */
  async restart(): Promise<SessionInfo> {
    return this.lifecycle('POST', '/restart');
  }

  /** Freezes the machine in place (memory kept). */
  async pause(): Promise<SessionInfo> {
    return this.lifecycle('POST', '/pause');
  }

  /**
   * Changes the machine's CPU and memory limits in place (processes and memory kept),
   * up to the contract's ceiling (by default 4× the starting size).
   */
  async resize(size: { cpus?: number; memoryMb?: number }): Promise<SessionInfo> {
    this.info = (await this.connection.json<SessionInfo>('POST', this.path('/resize'), size)).body;
    return this.info;
  }

  /** Keeps the machine from pausing or suspending when idle (`false` lets it sleep again). */
  async keepAwake(keepAwake = true): Promise<SessionInfo> {
    this.info = (await this.connection.json<SessionInfo>('POST', this.path('/keep-awake'), { keepAwake })).body;
    return this.info;
  }

  /**
   * Forks the session into `count` independent sessions with its memory,
   * processes and files, each with a fresh hostname, machine id and RNG
   * (from the machine now, or from `snapshotId`). Throws ForkError when any
   * branch failed; `error.created` holds the branches that exist.
   */
  async fork(options: { count: number; snapshotId?: string }): Promise<Sandbox[]> {
    const body = { count: options.count, ...(options.snapshotId === undefined ? {} : { snapshotId: options.snapshotId }) };
    const { body: result } = await this.connection.json<ForkResult>('POST', this.path('/fork'), body);
    const created: Sandbox[] = [];
    const failures: ForkBranchFailure[] = [];
    for (const branch of result.branches) {
      if ('error' in branch && typeof branch.error === 'object' && branch.error !== null && 'index' in branch) failures.push(branch as ForkBranchFailure);
      else created.push(new Sandbox(this.connection, branch as SessionInfo));
    }
    if (failures.length > 0) {
      const causes = failures.map((failure) => `#${failure.index} ${failure.error.code}: ${failure.error.message}`).join('; ');
      throw new ForkError(`${failures.length} of ${options.count} branches failed (${causes}); the ${created.length} created are in error.created: use or kill them`, created, failures);
    }
    return created;
  }

  /** Terminates the session: machine, disk and memory images are destroyed. */
  async kill(): Promise<SessionInfo> {
    return this.lifecycle('DELETE', '');
  }

  /** Resets the runaway breaker after a human looked at the session. */
  async resetGuard(): Promise<SessionInfo> {
    return this.lifecycle('POST', '/guard/reset');
  }

  /** The session's audit records. */
  async audit(options: { afterSeq?: number; limit?: number } = {}): Promise<AuditRecord[]> {
    const query = new URLSearchParams();
    if (options.afterSeq !== undefined) query.set('afterSeq', String(options.afterSeq));
    if (options.limit !== undefined) query.set('limit', String(options.limit));
    return (await this.connection.json<{ records: AuditRecord[] }>('GET', `${this.path('/audit')}?${query}`)).body.records;
  }

  /** The session's audit chain as JSON lines: every record, then its head signed with the server's audit key. */
  async exportAudit(): Promise<string> {
    return (await this.connection.send('GET', this.path('/audit/export'))).text();
  }

  /** Verifies the session's audit hash chain. */
  async verifyAudit(): Promise<AuditVerification> {
    return (await this.connection.json<AuditVerification>('GET', this.path('/audit/verify'))).body;
  }

  private async lifecycle(method: string, suffix: string): Promise<SessionInfo> {
    this.info = (await this.connection.json<SessionInfo>(method, this.path(suffix))).body;
    return this.info;
  }

  private path(suffix: string): string {
    return `/v1/sessions/${encodeURIComponent(this.id)}${suffix}`;
  }
}
