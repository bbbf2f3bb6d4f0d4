import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../../src/stores/sqlite/sqlite-store.js';
import { verifyChain } from '../../../src/audit/hash-chain.js';

function seeded(): { dir: string; path: string } {
  const dir = mkdtempSync('/tmp/airlock-audit-');
  const path = join(dir, 'a.db');
  const store = new SqliteStore(path);
  for (let i = 0; i < 5; i += 1) store.appendAudit({ sessionId: 'ses_a', type: 'tool-call.completed', data: { i } });
  store.appendAudit({ sessionId: 'ses_b', type: 'session.created', data: {} });
  store.close();
  return { dir, path };
}

function verify(path: string) {
  const store = new SqliteStore(path);
  try {
    return verifyChain('ses_a', store.listAudit('ses_a'), store.auditHead('ses_a'));
  } finally {
    store.close();
  }
}

describe('audit hash chain', () => {
  const tamperings: [string, string, string][] = [
    ['edited data', "UPDATE audit_records SET data = '{\"i\":99}' WHERE session_id = 'ses_a' AND seq = 3", 'edited'],
    ['edited type', "UPDATE audit_records SET type = 'tool-call.denied' WHERE session_id = 'ses_a' AND seq = 2", 'edited'],
    ['removed middle', "DELETE FROM audit_records WHERE session_id = 'ses_a' AND seq = 3", 'removed'],
    ['removed last', "DELETE FROM audit_records WHERE session_id = 'ses_a' AND seq = 5", 'truncated'],
    ['reordered', "UPDATE audit_records SET seq = 100 WHERE session_id = 'ses_a' AND seq = 2; UPDATE audit_records SET seq = 2 WHERE session_id = 'ses_a' AND seq = 4; UPDATE audit_records SET seq = 4 WHERE session_id = 'ses_a' AND seq = 100", 'reordered'],
    ['moved from another session', "UPDATE audit_records SET session_id = 'ses_a', seq = 6 WHERE session_id = 'ses_b'", 'truncated'],
  ];

  it('verifies an untouched chain', () => {
    const { dir, path } = seeded();
    assert.deepEqual(verify(path), { ok: true, records: 5 });
    rmSync(dir, { recursive: true });
  });

  for (const [name, sql] of tamperings) {
    it(`detects ${name}`, () => {
      const { dir, path } = seeded();
      const db = new Database(path);
      db.exec(sql);
      db.close();
      const result = verify(path);
      assert.equal(result.ok, false, JSON.stringify(result));
      rmSync(dir, { recursive: true });
    });
  }
});
