/** The glob tool's matcher and the wider pattern it gives find. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { findPathPattern, globToRegExp } from '@airlock/mcp';

describe('globToRegExp', () => {
  const cases: [string, string[], string[]][] = [
    ['*.ts', ['a.ts', 'b.d.ts'], ['src/a.ts', 'a.tsx']],
    ['**/*.ts', ['a.ts', 'src/a.ts', 'src/deep/b.ts'], ['a.js', 'src/a.tsx']],
    ['src/**', ['src/a', 'src/b/c'], ['lib/a']],
    ['src/**/test/*.js', ['src/test/a.js', 'src/x/y/test/b.js'], ['src/test/x/a.js']],
    ['file?.{js,ts}', ['file1.js', 'fileA.ts'], ['file10.js', 'file1.py']],
    ['[a-c]*.md', ['alpha.md', 'c.md'], ['delta.md']],
    ['[!a]*.md', ['beta.md'], ['alpha.md']],
    ['a+b(c).txt', ['a+b(c).txt'], ['aab(c).txt']],
  ];
  for (const [pattern, yes, no] of cases) {
    it(pattern, () => {
      const regex = globToRegExp(pattern);
      for (const path of yes) assert.ok(regex.test(path), `${pattern} should match ${path}`);
      for (const path of no) assert.ok(!regex.test(path), `${pattern} should not match ${path}`);
    });
  }
  it('rejects an unbalanced brace', () => assert.throws(() => globToRegExp('{a,b'), /unbalanced/));
});

describe('findPathPattern', () => {
  it('widens ** and braces to * under the root, escaping the root', () => {
    assert.equal(findPathPattern('/workspace', '**/*.ts'), '/workspace/*.ts');
    assert.equal(findPathPattern('/workspace/', 'src/{a,b}/x'), '/workspace/src/*/x');
    assert.equal(findPathPattern('/', '*.md'), '/*.md');
    assert.equal(findPathPattern('/work[1]', '*'), '/work\\[1\\]/*');
  });
});
