/**
 * Issue 13's "moving up", end to end: a server that started on SQLite is
 * stopped, `airlock store copy` moves its sessions, approvals, snapshot
 * records and audit chains into PostgreSQL and verifies every chain there,
 * and `airlock serve --store postgres://…` on the same data dir then serves
 * the same sessions, disks and snapshots.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestInstallation } from '../support/test-installation.js';
import { createTestDatabase, NO_POSTGRES, testPostgresUrl, type TestDatabase } from '../support/test-database.js';

describe('airlock store copy', { skip: testPostgresUrl() ? false : NO_POSTGRES }, () => {
  let installation: TestInstallation;
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase('copy');
    installation = await TestInstallation.start({ store: 'sqlite' });
  });
  after(async () => {
    await installation?.destroy();
    await database?.drop();
  });

  it('moves everything into PostgreSQL, verifies every chain, and the same sessions are served from there', async () => {
    const id = installation.cli(['sessions', 'create']).stdout.trim();
    assert.ok(id.startsWith('ses_'));
    assert.equal(installation.cli(['files', 'write', id, '/workspace/kept.txt'], { input: 'from the SQLite days\n' }).code, 0);
    const snapshot = installation.cli(['snapshots', 'create', id, '--name', 'before-move', '--json']);
    assert.equal(snapshot.code, 0, snapshot.stderr);
    const snapshotId = (JSON.parse(snapshot.stdout) as { id: string }).id;
    assert.equal(installation.cli(['sessions', 'suspend', id]).code, 0);
    const recordsBefore = (JSON.parse(installation.cli(['audit', id, '--json']).stdout) as unknown[]).length;

    const whileRunning = installation.cli(['store', 'copy', '--data-dir', installation.dataDir, '--to', database.url]);
    assert.equal(whileRunning.code, 1);
    assert.match(whileRunning.stderr, /is running on .*stop it first/);

    await installation.stopServer();
    // Pointing the data dir at PostgreSQL before copying would make its disks look like orphans: refused.
    installation.storeUrl = database.url;
    await assert.rejects(installation.startServer(), /holds 1 live sessions in its SQLite store that are not in .*airlock store copy/s);
    installation.storeUrl = undefined;
    const copied = installation.cli(['store', 'copy', '--data-dir', installation.dataDir, '--to', database.url]);
    assert.equal(copied.code, 0, copied.stdout + copied.stderr);
    assert.match(copied.stdout, /copied 1 sessions, 0 approvals, 2 snapshot records and \d+ audit chains/);
    assert.match(copied.stdout, /verified: every chain intact/);
    const again = installation.cli(['store', 'copy', '--data-dir', installation.dataDir, '--to', database.url]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already holds 1 sessions/);

    // Once moved, the data dir is served from PostgreSQL only.
    await assert.rejects(installation.startServer(), /live in PostgreSQL .*airlock serve --store/s);
    installation.storeUrl = database.url;
    await installation.startServer();
    const listed = JSON.parse(installation.cli(['sessions', 'ls', '--json']).stdout) as { id: string; state: string }[];
    assert.deepEqual(
      listed.map((session) => [session.id, session.state]),
      [[id, 'suspended']],
    );
    assert.equal(
      installation.cli(['files', 'read', id, '/workspace/kept.txt']).stdout,
      'from the SQLite days\n',
      'the disk and the suspended machine are served',
    );
    assert.ok(installation.cli(['snapshots', 'ls', '--json']).stdout.includes(snapshotId));
    const verified = installation.cli(['audit', 'verify', id]);
    assert.equal(verified.code, 0, verified.stdout);
    assert.ok((JSON.parse(installation.cli(['audit', id, '--json']).stdout) as unknown[]).length > recordsBefore, 'new records continue the copied chain');
    const branch = installation.cli(['sessions', 'fork', id, '--snapshot', snapshotId, '--count', '1', '--json']);
    assert.equal(branch.code, 0, branch.stderr);
  });
});
