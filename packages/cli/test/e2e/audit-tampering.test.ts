/**
 * Issue 12, item 6, end to end: someone who can write the database (the
 * SQLite file, or the PostgreSQL tables) but holds neither the audit key nor
 * the head file edits, deletes, truncates, wipes or recomputes a session's
 * chain; `airlock audit verify` exits 1 naming the first bad record or the
 * missing tail each time. `airlock audit export` prints the records and the
 * signed head as JSON lines, and refuses a chain whose tail was deleted.
 * Issue 22, item 7: the system chain (`audit verify --system`: an edited
 * token record) and every chain at once (`audit verify --all`: a session the
 * database lost whole is reported missing).
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
    // A token.created record on the system chain, and both installation-wide checks pass before any tampering.
    assert.equal(installation.cli(['tokens', 'create', '--tenant', 'acme', '--role', 'operator', '--json']).code, 0);
    const system = installation.cli(['audit', 'verify', '--system']);
    assert.equal(system.code, 0, system.stdout + system.stderr);
    const all = installation.cli(['audit', 'verify', '--all']);
    assert.equal(all.code, 0, all.stdout + all.stderr);
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
    // No signed head over the shortened chain.
    const exported = installation.cli(['audit', 'export', id]);
    assert.notEqual(exported.code, 0, exported.stdout);
    assert.match(exported.stderr, /AUDIT_CHAIN_TRUNCATED: .*ends at record 4/);
    assert.doesNotMatch(exported.stdout, /"kind":"head"/);
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

  it('an edited token.created record of the system chain: `audit verify --system` names it', async () => {
    const lines = installation
      .cli(['audit', 'export', '--system'])
      .stdout.trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Entry & { kind: string });
    const created = lines.find((line) => line.kind === 'record' && line.type === 'token.created' && line.data['role'] === 'operator');
    assert.ok(created, 'the token.created record is on the system chain');
    await installation.writeStore(
      {
        sqlite: "UPDATE audit_records SET data = ? WHERE session_id = '' AND seq = ?",
        postgres: "UPDATE audit_records SET data = $1::json WHERE session_id = '' AND seq = $2",
      },
      [JSON.stringify({ ...created.data, role: 'admin' }), created.seq],
    );
    const verify = installation.cli(['audit', 'verify', '--system']);
    assert.equal(verify.code, 1, verify.stdout);
    assert.match(verify.stdout, new RegExp(`^FAILED at record ${created.seq}: edited: record ${created.seq} \\(token.created\\)`));
  });

  it('a session deleted whole (rows, chain, head): `audit verify --all` reports it missing', async () => {
    const id = sessions[3] ?? '';
    // Terminated first, so that its disk goes with it; then every trace of it leaves the database.
    assert.equal(installation.cli(['sessions', 'rm', id]).code, 0);
    for (const table of ['audit_records', 'audit_heads']) await installation.writeStore(both(`DELETE FROM ${table} WHERE session_id = $1`), [id]);
    assert.equal(await installation.writeStore(both('DELETE FROM sessions WHERE id = $1'), [id]), 1);
    const verify = installation.cli(['audit', 'verify', '--all', '--json']);
    assert.equal(verify.code, 1, verify.stdout);
    const report = JSON.parse(verify.stdout) as { ok: boolean; missing: string[]; failed: { sessionId: string; missing: boolean }[] };
    assert.deepEqual(report.missing, [id]);
    assert.deepEqual(report.failed.map((chain) => chain.sessionId).sort(), ['', ...sessions].sort(), 'every tampered chain, the system chain included');
    const text = installation.cli(['audit', 'verify', '--all']);
    assert.equal(text.code, 1);
    assert.match(text.stdout, new RegExp(`^${id}: MISSING`, 'm'));
  });
});
