/**
 * Builds the web console into dist/web: one bundled, minified script and
 * stylesheet named by content hash (cached for a year by the server), and an
 * index.html that names them (revalidated on every load). Nothing is fetched
 * from elsewhere at run time: the server has no internet.
 */
import { build } from 'esbuild';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'web');
rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'assets'), { recursive: true });

const result = await build({
  entryPoints: [join(root, 'src', 'main.tsx')],
  bundle: true,
  minify: true,
  sourcemap: true,
  format: 'esm',
  // xterm.js is a separate chunk, loaded only when a person opens a terminal.
  splitting: true,
  chunkNames: 'chunk-[hash]',
  target: ['es2022'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir: join(out, 'assets'),
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  metafile: true,
  legalComments: 'linked',
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((path) => basename(path));
const script = outputs.find((name) => name.startsWith('main-') && name.endsWith('.js'));
const stylesheet = outputs.find((name) => name.startsWith('main-') && name.endsWith('.css'));
if (!script || !stylesheet) throw new Error(`the console build made no script or stylesheet: ${outputs.join(', ')}`);

writeFileSync(
  join(out, 'index.html'),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Airlock console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/${stylesheet}">
<script type="module" src="/assets/${script}"></script>
</head>
<body>
<div id="app"></div>
<noscript>The Airlock console needs JavaScript.</noscript>
</body>
</html>
`,
);
process.stdout.write(`console: built ${script} and ${stylesheet} into ${out}\n`);
