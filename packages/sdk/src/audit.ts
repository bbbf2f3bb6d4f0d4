/** Audit checks that reach past one session (admin only): the system chain, and every chain at once. */
import type { Connection } from './connection.js';
import type { AuditReport, AuditVerification } from './types.js';

/** The server's audit chains as a whole; a session's own chain is `Sandbox.verifyAudit`. */
export class Audit {
  constructor(private readonly connection: Connection) {}

  /** Verifies the system chain: token, tenant and secret records (its sessionId is ''). */
  async verifySystem(): Promise<AuditVerification> {
    return (await this.connection.json<AuditVerification>('GET', '/v1/audit/system/verify')).body;
  }

  /** The system chain as JSON lines: every record, then its head signed with the server's audit key. */
  async exportSystem(): Promise<string> {
    return (await this.connection.send('GET', '/v1/audit/system/export')).text();
  }

  /** Verifies every chain, and reports those the database lost while the head file outside it still names them. */
  async verifyAll(): Promise<AuditReport> {
    return (await this.connection.json<AuditReport>('GET', '/v1/audit/verify')).body;
  }
}
