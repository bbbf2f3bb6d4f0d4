import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConsoleAssets, defaultConsoleAssetsDir } from '../../../src/api/console-assets.js';

describe('the console files', () => {
  it('answers files by path, index.html for client routes, and nothing for a missing file', () => {
    const dir = mkdtempSync('/tmp/airlock-console-assets-');
    try {
      mkdirSync(join(dir, 'assets'));
      writeFileSync(join(dir, 'index.html'), '<!doctype html>');
      writeFileSync(join(dir, 'assets', 'main-ABCD2345.js'), 'x');
      writeFileSync(join(dir, 'assets', 'main-ABCD2345.js.LEGAL.txt'), 'licenses');
      const assets = ConsoleAssets.load(dir);
      assert.equal(assets.missingReason, null);
      for (const path of ['/', '/sessions/ses_1', '/approvals?tab=decided', '/index.html']) {
        assert.equal(assets.resolve(path)?.contentType, 'text/html; charset=utf-8', path);
        assert.equal(assets.resolve(path)?.immutable, false, path);
      }
      const script = assets.resolve('/assets/main-ABCD2345.js');
      assert.equal(script?.contentType, 'text/javascript; charset=utf-8');
      assert.equal(script?.immutable, true);
      assert.equal(assets.resolve('/assets/main-ABCD2345.js.LEGAL.txt')?.immutable, false, 'not named by its hash');
      assert.equal(assets.resolve('/assets/other-ABCD2345.js'), undefined);
      assert.equal(assets.resolve('/../index.html.bak'), undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says how to build a console that is not built', () => {
    const assets = ConsoleAssets.load('/nonexistent/console');
    assert.match(assets.missingReason ?? '', /npm run build/);
    assert.equal(assets.resolve('/'), undefined);
  });

  it('finds the built console through the @airlock/console package', () => {
    assert.match(defaultConsoleAssetsDir() ?? '', /packages\/console\/dist\/web$/);
  });
});
