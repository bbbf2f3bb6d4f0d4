/**
 * The audit chain against someone who can write the database but holds
 * neither the audit key nor the head file: every tampering below is done
 * with plain SQL on the SQLite file, and each must be found, naming the
 * first bad record or the missing tail.
 */
import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../../src/stores/sqlite/sqlite-store.js';
import { AuditLog } from '../../../src/audit/audit-log.js';
import { AuditHeadFile } from '../../../src/storage/audit-head-file.js';
import { loadOrCreateAuditKey } from '../../../src/storage/audit-key-file.js';
import { canonicalJson, GENESIS_HASH, hashRecord, isKeyed, verifyChain } from '../../../src/audit/hash-chain.js';
import { systemClock } from '../../../src/core/clock.js';
import type { AuditRecord } from '../../../src/audit/audit-record.js';

interface Bench {
  dir: string;
  path: string;
  key: Buffer;
  /** reopens store, head file and log, as a restarted server would */
  open(): { store: SqliteStore; audit: AuditLog; anchor: AuditHeadFile };
  sql(statement: string, ...params: unknown[]): void;
  rows(): AuditRecord[];
}

function bench(): Bench {
  const dir = mkdtempSync('/tmp/airlock-audit-');
  const path = join(dir, 'airlock.db');
  const { key } = loadOrCreateAuditKey(join(dir, 'audit.key'));
  return {
    dir,
    path,
    key,
    open() {
      const store = new SqliteStore(path);
      const anchor = new AuditHeadFile(join(dir, 'audit-heads.log'));
      return { store, anchor, audit: new AuditLog({ key, anchor, clock: systemClock }) };
    },
    sql(statement, ...params) {
      const db = new Database(path);
      try {
        db.prepare(statement).run(...params);
      } finally {
        db.close();
      }
    },
    rows() {
      const db = new Database(path);
      try {
        return (db.prepare("SELECT * FROM audit_records WHERE session_id = 'ses_a' ORDER BY seq").all() as Record<string, unknown>[]).map((row) => ({
          sessionId: String(row['session_id']),
          seq: Number(row['seq']),
          at: String(row['at']),
          type: String(row['type']),
          data: JSON.parse(String(row['data'])) as Record<string, unknown>,
          prevHash: String(row['prev_hash']),
          hash: String(row['hash']),
        }));
      } finally {
        db.close();
      }
    },
  };
}

/** Five records of ses_a, one of ses_b, as a server writes them. */
async function seed(b: Bench): Promise<void> {
  const { store, audit, anchor } = b.open();
  for (let i = 1; i <= 5; i += 1) await audit.appendNow(store, { sessionId: 'ses_a', type: 'tool-call.completed', data: { i } });
  await audit.appendNow(store, { sessionId: 'ses_b', type: 'session.created', data: {} });
  await store.close();
  anchor.close();
}

async function verify(b: Bench, sessionId = 'ses_a') {
  const { store, audit, anchor } = b.open();
  try {
    return await audit.verify(store, sessionId, { mustHaveRecords: true });
  } finally {
    await store.close();
    anchor.close();
  }
}

/** Rewrites every record of ses_a with `hash` and fixes the stored head, as a database writer would. */
function rewriteChain(b: Bench, hash: (record: Omit<AuditRecord, 'hash'>) => string): void {
  let prevHash = GENESIS_HASH;
  for (const record of b.rows()) {
    const unsigned = { ...record, prevHash };
    const next = hash(unsigned);
    b.sql("UPDATE audit_records SET prev_hash = ?, hash = ? WHERE session_id = 'ses_a' AND seq = ?", prevHash, next, record.seq);
    prevHash = next;
  }
  const last = b.rows().at(-1);
  b.sql("UPDATE audit_heads SET seq = ?, hash = ? WHERE session_id = 'ses_a'", last?.seq ?? 0, last?.hash ?? GENESIS_HASH);
}

describe('audit chain: keyed hashes and heads kept outside the database', () => {
  let b: Bench;
  beforeEach(async () => {
    b = bench();
    await seed(b);
  });
  afterEach(() => rmSync(b.dir, { recursive: true, force: true }));

  it('verifies an untouched chain as keyed, against the head kept outside the database', async () => {
    const result = await verify(b);
    assert.deepEqual(result, { ok: true, records: 5, authenticity: 'keyed', anchoredSeq: 5 });
    assert.ok(b.rows().every((record) => isKeyed(record.hash)));
    assert.equal(statSync(join(b.dir, 'audit.key')).mode & 0o777, 0o600, 'the key is readable by its owner only');
  });

  it('finds an edited record', async () => {
    b.sql("UPDATE audit_records SET data = '{\"i\":99}' WHERE session_id = 'ses_a' AND seq = 3");
    const result = await verify(b);
    assert.equal(result.ok, false);
    assert.deepEqual([result.problem?.seq, result.problem?.kind], [3, 'edited']);
  });

  it('finds a deleted record', async () => {
    b.sql("DELETE FROM audit_records WHERE session_id = 'ses_a' AND seq = 3");
    const result = await verify(b);
    assert.deepEqual([result.ok, result.problem?.seq, result.problem?.kind], [false, 3, 'removed']);
    assert.match(result.problem?.message ?? '', /record 3 is missing/);
  });

  it('finds a truncated tail even when the head inside the database was moved back', async () => {
    const third = b.rows()[2];
    b.sql("DELETE FROM audit_records WHERE session_id = 'ses_a' AND seq > 3");
    b.sql("UPDATE audit_heads SET seq = 3, hash = ? WHERE session_id = 'ses_a'", third?.hash);
    const result = await verify(b);
    assert.deepEqual([result.ok, result.problem?.seq, result.problem?.kind], [false, 4, 'truncated']);
    assert.match(result.problem?.message ?? '', /records 4–5 are missing/);
  });

  it('finds a chain whose records were all deleted', async () => {
    b.sql("DELETE FROM audit_records WHERE session_id = 'ses_a'");
    b.sql("DELETE FROM audit_heads WHERE session_id = 'ses_a'");
    const result = await verify(b);
    assert.deepEqual([result.ok, result.problem?.kind], [false, 'empty']);
    assert.match(result.problem?.message ?? '', /no records at all, but the head kept outside the database says 5 were written/);
  });

  it('refuses to export a chain shorter than the head kept outside the database: no signed head over what is left', async () => {
    const third = b.rows()[2];
    b.sql("DELETE FROM audit_records WHERE session_id = 'ses_a' AND seq > 3");
    b.sql("UPDATE audit_heads SET seq = 3, hash = ? WHERE session_id = 'ses_a'", third?.hash);
    const { store, audit, anchor } = b.open();
    try {
      await assert.rejects(audit.exportChain(store, 'ses_a'), { code: 'AUDIT_CHAIN_TRUNCATED', message: /ends at record 3, but .* says 5 were written/ });
      assert.equal((await audit.exportChain(store, 'ses_b')).at(-1)?.kind, 'head', 'control: an intact chain exports');
    } finally {
      await store.close();
      anchor.close();
    }
  });

  it('verifies every chain at once, and reports one the database lost whole as missing', async () => {
    const { store, audit, anchor } = b.open();
    try {
      assert.deepEqual(await audit.verifyAll(store), { ok: true, chains: 3, failed: [], missing: [] }, 'the system chain, ses_a and ses_b');
      b.sql("DELETE FROM audit_records WHERE session_id = 'ses_b'");
      b.sql("DELETE FROM audit_heads WHERE session_id = 'ses_b'");
      const report = await audit.verifyAll(store);
      assert.deepEqual([report.ok, report.chains, report.missing], [false, 3, ['ses_b']]);
      assert.deepEqual(
        report.failed.map((chain) => [chain.sessionId, chain.missing, chain.problem?.kind]),
        [['ses_b', true, 'empty']],
      );
    } finally {
      await store.close();
      anchor.close();
    }
  });

  it('finds a chain recomputed without the key (plain SHA-256, as the old chains were)', async () => {
    b.sql("UPDATE audit_records SET data = '{\"i\":42}' WHERE session_id = 'ses_a' AND seq = 2");
    rewriteChain(b, hashRecord);
    const result = await verify(b);
    assert.equal(result.ok, false);
    assert.equal(result.problem?.kind, 'forged');
    assert.equal(result.problem?.seq, 5, 'the first record that contradicts the head kept outside');
  });

  it('finds a chain recomputed with another key', async () => {
    const forger = randomBytes(32);
    rewriteChain(
      b,
      (record) =>
        `hmac-sha256:${createHmac('sha256', forger)
          .update(
            canonicalJson({ sessionId: record.sessionId, seq: record.seq, at: record.at, type: record.type, data: record.data, prevHash: record.prevHash }),
          )
          .digest('hex')}`,
    );
    const result = await verify(b);
    assert.deepEqual([result.ok, result.problem?.seq, result.problem?.kind], [false, 1, 'edited']);
  });

  it('finds a forged line in the head file', async () => {
    appendFileSync(join(b.dir, 'audit-heads.log'), `${JSON.stringify({ s: 'ses_a', q: 9, h: 'x', g: '00'.repeat(32) })}\n`);
    const result = await verify(b);
    assert.equal(result.ok, false);
    assert.match(result.problem?.message ?? '', /not signed with this server's audit key/);
  });

  it('accepts a head file behind the chain (a crash between commit and the head write) and skips a torn last line', async () => {
    const lines = readFileSync(join(b.dir, 'audit-heads.log'), 'utf8').split('\n').filter(Boolean);
    // keep the heads up to ses_a's third record, then a torn line
    const kept = lines.filter((line) => (JSON.parse(line) as { s: string; q: number }).q <= 3 || (JSON.parse(line) as { s: string }).s !== 'ses_a');
    writeFileSync(join(b.dir, 'audit-heads.log'), `${kept.join('\n')}\n{"s":"ses_a","q":5,"h`);
    const result = await verify(b);
    assert.deepEqual(result, { ok: true, records: 5, authenticity: 'keyed', anchoredSeq: 3 });
    const { store, audit, anchor } = b.open();
    await audit.appendNow(store, { sessionId: 'ses_a', type: 'tool-call.completed', data: { i: 6 } });
    await store.close();
    anchor.close();
    assert.deepEqual(await verify(b), { ok: true, records: 6, authenticity: 'keyed', anchoredSeq: 6 });
  });
});

describe('audit chain: chains written before keys', () => {
  it('verifies a legacy chain as integrity only, then keys the records appended after', async () => {
    const b = bench();
    try {
      const { store, audit, anchor } = b.open();
      // What an older Airlock wrote: plain SHA-256 hashes.
      let prevHash = GENESIS_HASH;
      await store.transaction(async (tx) => {
        for (let seq = 1; seq <= 3; seq += 1) {
          const unsigned = { sessionId: 'ses_a', seq, at: new Date().toISOString(), type: 'tool-call.completed', data: { seq }, prevHash };
          const record = { ...unsigned, hash: hashRecord(unsigned) };
          await tx.insertAuditRecord(record);
          prevHash = record.hash;
        }
      });
      const legacy = await audit.verify(store, 'ses_a', { mustHaveRecords: true });
      assert.deepEqual([legacy.ok, legacy.authenticity, legacy.note], [true, 'legacy', 'legacy unkeyed chain: integrity only, not authenticity']);
      audit.anchorExisting([{ sessionId: 'ses_a', head: await store.auditHead('ses_a') }]);
      await audit.appendNow(store, { sessionId: 'ses_a', type: 'tool-call.completed', data: { seq: 4 } });
      const mixed = await audit.verify(store, 'ses_a', { mustHaveRecords: true });
      assert.deepEqual([mixed.ok, mixed.authenticity], [true, 'mixed']);
      assert.match(mixed.note ?? '', /records 1–3 predate the audit key/);
      await store.close();
      anchor.close();
      // An unkeyed record after keyed ones was written without the key.
      const last = b.rows().at(-1);
      const forged = { ...(last as AuditRecord), seq: 5, prevHash: last?.hash ?? '', data: {} };
      const records = [...b.rows(), { ...forged, hash: hashRecord(forged) }];
      const result = verifyChain('ses_a', records, { storedHead: { seq: 5, hash: records.at(-1)?.hash ?? '' }, key: b.key });
      assert.deepEqual([result.ok, result.problem?.seq, result.problem?.kind], [false, 5, 'forged']);
    } finally {
      rmSync(b.dir, { recursive: true, force: true });
    }
  });
});
