// ESLint for the whole repository: typescript-eslint's recommended rules, Prettier's
// formatting rules off (Prettier owns formatting), and the import boundaries the
// architecture depends on, so that the lint fails instead of a reviewer noticing.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

/** Folders of packages/runtime/src that hold adapters (technology), never imported by core/. */
const ADAPTERS = ['images', 'policy', 'drivers', 'stores', 'egress', 'storage', 'secrets', 'api', 'telemetry', 'host'];
/** Modules that do I/O; core/ and audit/ reach the world through ports only. */
const IO_MODULES = [
  'node:fs',
  'node:fs/*',
  'node:child_process',
  'node:net',
  'node:http',
  'node:https',
  'node:http2',
  'node:dgram',
  'node:tls',
  'node:dns',
  'node:dns/*',
  'better-sqlite3',
  'pg',
  'fastify',
];

const io = { group: IO_MODULES, message: 'core/ and audit/ do no I/O themselves: define a port in core/ and implement it in an adapter.' };

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'packages/sdk/src/generated/**', 'packages/runtime/src/api/e2b/generated/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        URL: 'readonly',
        URLSearchParams: 'readonly',
        fetch: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        Response: 'readonly',
        Request: 'readonly',
        Headers: 'readonly',
        structuredClone: 'readonly',
        queueMicrotask: 'readonly',
        NodeJS: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports', disallowTypeAnnotations: false }],
      'no-restricted-syntax': ['error', { selector: 'ExportAllDeclaration', message: 'export by name: no `export *` (STYLE.md)' }],
      // NUL and other control bytes are matched on purpose (paths, protocol frames).
      'no-control-regex': 'off',
    },
  },
  {
    files: ['packages/runtime/src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ADAPTERS.map((folder) => `../${folder}/*`),
              message: 'core/ must not import an adapter: put the port it needs in core/ and wire the adapter in server.ts (the composition root).',
            },
            { group: ['../server.js', '../data-dir.js', '../index.js'], message: 'core/ must not import the composition root or the host layout.' },
            io,
          ],
        },
      ],
    },
  },
  {
    files: ['packages/runtime/src/audit/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ADAPTERS.map((folder) => `../${folder}/*`), message: 'audit/ is used by core/: it must not import an adapter.' }, io] },
      ],
    },
  },
  {
    files: ['packages/runtime/src/egress/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['../drivers/*', '../drivers/**'], message: 'egress/ must not import a driver: shared host helpers live in host/.' }] },
      ],
    },
  },
  {
    files: ['packages/sdk/src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['node:*'], message: 'the SDK is browser-safe: no Node-only imports.' }] }],
    },
  },
);
