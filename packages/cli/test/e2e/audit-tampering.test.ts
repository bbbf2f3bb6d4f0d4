/**
 * Issue 12, item 6, end to end: someone who can write the database (the
 * SQLite file, or the PostgreSQL tables) but holds neither the audit key nor
 * the head file edits, deletes, truncates, wipes or recomputes a session's
 * chain; `airlock audit verify` exits 1 naming the first bad record or the
 * missing tail each time. `airlock audit export` prints the records and the
 * signed head as JSON lines.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { TestInstallation } from '../support/test-installation.js';

interface Entry {
  sessionId: string;
  seq: number;
  at: string;
  type: string;
  data: Record<string, unknown>;
  prevHash: string;
  hash: string;
}

/** What an attacker without the key can compute: the old, unkeyed hash. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

describe('audit verify finds every tampering of a database writer', () => {
  let installation: TestInstallation;
  const sessions: string[] = [];
  before(async () => {
    installation = await TestInstallation.start();
    for (let i = 0; i < 5; i += 1) {
      const id = installation.cli(['sessions', 'create', '--mode', 'per-call']).stdout.trim();
      assert.ok(id.startsWith('ses_'));
      for (let call = 0; call < 2; call += 1) assert.equal(installation.cli(['exec', id, '--', 'true']).code, 0);
      assert.equal(installation.cli(['audit', 'verify', id]).code, 0);
      sessions.push(id);
    }
  });
  after(async () => {
    await installation?.destroy();
  });

  const records = (id: string): Entry[] => JSON.parse(installation.cli(['audit', id, '--json']).stdout) as Entry[];
  const both = (statement: string) => ({ sqlite: statement.replace(/\$\d/g, '?'), postgres: statement });
  const verifyFails = (id: string, pattern: RegExp) => {
    const verify = installation.cli(['audit', 'verify', id]);
    assert.equal(verify.code, 1, verify.stdout);
    assert.match(verify.stdout, pattern);
  };

  it('exports the records and the signed head as JSON lines', () => {
    const id = sessions[0] ?? '';
    const exported = installation.cli(['audit', 'export', id]);
    assert.equal(exported.code, 0, exported.stderr);
    const lines = exported.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { kind: string; seq: number; hash: string; signature?: string; anchoredSeq?: number });
    const head = lines.at(-1);
    assert.equal(head?.kind, 'head');
    assert.equal(lines.filter((line) => line.kind === 'record').length, records(id).length);
    assert.equal(head?.seq, records(id).length);
    assert.equal(head?.hash, records(id).at(-1)?.hash);
    assert.match(head?.signature ?? '', /^[0-9a-f]{64}$/);
    assert.equal(head?.anchoredSeq, records(id).length, 'the head kept outside the database is current');
  });

  it('an edited record', async () => {
    const id = sessions[0] ?? '';
    assert.equal(await installation.writeStore(both("UPDATE audit_records SET type = 'tool-call.denied' WHERE session_id = $1 AND seq = 2"), [id]), 1);
    verifyFails(id, /^FAILED at record 2: edited/);
  });

  it('a deleted record', async () => {
    const id = sessions[1] ?? '';
    assert.equal(await installation.writeStore(both('DELETE FROM audit_records WHERE session_id = $1 AND seq = 3'), [id]), 1);
    verifyFails(id, /^FAILED at record 3: removed/);
  });

  it('a truncated tail, with the head inside the database moved back to match', async () => {
    const id = sessions[2] ?? '';
    const total = records(id).length;
    const fourth = records(id)[3];
    await installation.writeStore(both('DELETE FROM audit_records WHERE session_id = $1 AND seq > 4'), [id]);
    await installation.writeStore(both('UPDATE audit_heads SET seq = 4, hash = $1 WHERE session_id = $2'), [fourth?.hash, id]);
    verifyFails(id, new RegExp(`^FAILED at record 5: truncated: .*records 5–${total} are missing`));
  });

  it('all records deleted', async () => {
    const id = sessions[3] ?? '';
    await installation.writeStore(both('DELETE FROM audit_records WHERE session_id = $1'), [id]);
    await installation.writeStore(both('DELETE FROM audit_heads WHERE session_id = $1'), [id]);
    verifyFails(id, /^FAILED at record 1: empty: the chain has no records at all/);
  });

  it('a chain recomputed without the key', async () => {
    const id = sessions[4] ?? '';
    let prevHash = '0'.repeat(64);
    for (const record of records(id)) {
      const data = record.seq === 2 ? { ...record.data, exitCode: 0, note: 'rewritten' } : record.data;
      const body = canonical({ sessionId: record.sessionId, seq: record.seq, at: record.at, type: record.type, data, prevHash });
      const hash = createHash('sha256').update(body).digest('hex');
      await installation.writeStore(
        {
          sqlite: 'UPDATE audit_records SET data = ?, prev_hash = ?, hash = ? WHERE session_id = ? AND seq = ?',
          postgres: 'UPDATE audit_records SET data = $1::json, prev_hash = $2, hash = $3 WHERE session_id = $4 AND seq = $5',
        },
        [JSON.stringify(data), prevHash, hash, id, record.seq],
      );
      prevHash = hash;
    }
    await installation.writeStore(both('UPDATE audit_heads SET hash = $1 WHERE session_id = $2'), [prevHash, id]);
    verifyFails(id, /^FAILED at record \d+: forged: .*differs from the head kept outside the database/);
  });
});
