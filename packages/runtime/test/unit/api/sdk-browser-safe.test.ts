import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SDK_ENTRY = fileURLToPath(new URL('../../../../../sdk/dist/src/index.js', import.meta.url));
const BUILTINS = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

/** Every module reachable from `entry` through static and dynamic imports, with what each imports. */
function walk(entry: string, seen = new Map<string, string[]>()): Map<string, string[]> {
  if (seen.has(entry)) return seen;
  const source = readFileSync(entry, 'utf8');
  const specifiers = [...source.matchAll(/(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1] ?? m[2] ?? '');
  seen.set(entry, specifiers);
  for (const specifier of specifiers) {
    if (specifier.startsWith('.')) walk(resolve(dirname(entry), specifier), seen);
  }
  return seen;
}

test('the SDK root imports nothing Node-only and no third-party package (browser and edge safe)', () => {
  const graph = walk(SDK_ENTRY);
  assert.ok(graph.size > 3, 'the walk found the SDK modules');
  for (const [file, specifiers] of graph) {
    for (const specifier of specifiers) {
      assert.ok(!BUILTINS.has(specifier), `${join(file)} imports the Node module ${specifier}`);
      assert.ok(specifier.startsWith('.'), `${file} imports the package ${specifier}; the root must stay dependency-free`);
    }
  }
});
