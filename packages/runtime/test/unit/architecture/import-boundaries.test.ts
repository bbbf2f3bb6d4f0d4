/**
 * The boundaries the lint keeps: core/ importing an adapter, core/ or audit/
 * doing I/O, egress/ importing a driver, `export *` anywhere. Each case
 * lints a one-line file placed where the rule applies and expects the error;
 * the same line in a place the rule allows passes (so the test can fail).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const root = fileURLToPath(new URL('../../../../../../', import.meta.url));
const eslint = new ESLint({ cwd: root });

async function problems(path: string, text: string): Promise<string[]> {
  const [result] = await eslint.lintText(text, { filePath: `${root}${path}` });
  return (result?.messages ?? []).map((message) => `${message.ruleId ?? 'parse'}: ${message.message}`);
}

describe('import boundaries enforced by the lint', () => {
  const cases: { what: string; path: string; text: string; rule: RegExp }[] = [
    {
      what: 'core/ importing a store',
      path: 'packages/runtime/src/core/x-probe.ts',
      text: "import { SqliteStore } from '../stores/sqlite/sqlite-store.js';\nexport const probe = SqliteStore;\n",
      rule: /must not import an adapter/,
    },
    {
      what: 'core/ importing a driver',
      path: 'packages/runtime/src/core/x-probe.ts',
      text: "import { GvisorDriver } from '../drivers/gvisor/index.js';\nexport const probe = GvisorDriver;\n",
      rule: /must not import an adapter/,
    },
    {
      what: 'core/ importing the policy implementation',
      path: 'packages/runtime/src/core/x-probe.ts',
      text: "import { ContractAuthorizer } from '../policy/contract-authorizer.js';\nexport const probe = ContractAuthorizer;\n",
      rule: /must not import an adapter/,
    },
    {
      what: 'core/ importing images',
      path: 'packages/runtime/src/core/x-probe.ts',
      text: "import { LocalImageCatalog } from '../images/local-image-catalog.js';\nexport const probe = LocalImageCatalog;\n",
      rule: /must not import an adapter/,
    },
    {
      what: 'core/ importing egress',
      path: 'packages/runtime/src/core/x-probe.ts',
      text: "import { EgressGateway } from '../egress/egress-gateway.js';\nexport const probe = EgressGateway;\n",
      rule: /must not import an adapter/,
    },
    {
      what: 'core/ doing file I/O',
      path: 'packages/runtime/src/core/x-probe.ts',
      text: "import { readFileSync } from 'node:fs';\nexport const probe = readFileSync;\n",
      rule: /do no I\/O/,
    },
    {
      what: 'audit/ doing file I/O',
      path: 'packages/runtime/src/audit/x-probe.ts',
      text: "import { writeFileSync } from 'node:fs';\nexport const probe = writeFileSync;\n",
      rule: /do no I\/O/,
    },
    {
      what: 'egress/ importing a driver',
      path: 'packages/runtime/src/egress/x-probe.ts',
      text: "import { GvisorDriver } from '../drivers/gvisor/index.js';\nexport const probe = GvisorDriver;\n",
      rule: /must not import a driver/,
    },
    { what: '`export *`', path: 'packages/runtime/src/policy/x-probe.ts', text: "export * from './session-contract.js';\n", rule: /no `export \*`/ },
  ];
  for (const { what, path, text, rule } of cases) {
    it(`fails on ${what}`, async () => {
      const found = await problems(path, text);
      assert.ok(
        found.some((message) => rule.test(message)),
        found.join('\n') || 'no problem reported',
      );
    });
  }

  it('allows the same imports where they belong (the composition root, adapters)', async () => {
    assert.deepEqual(
      await problems('packages/runtime/src/x-probe.ts', "import { SqliteStore } from './stores/sqlite/sqlite-store.js';\nexport const probe = SqliteStore;\n"),
      [],
    );
    assert.deepEqual(
      await problems('packages/runtime/src/storage/x-probe.ts', "import { readFileSync } from 'node:fs';\nexport const probe = readFileSync;\n"),
      [],
    );
    assert.deepEqual(
      await problems('packages/runtime/src/core/x-probe.ts', "import type { AuditLog } from '../audit/audit-log.js';\nexport type Probe = AuditLog;\n"),
      [],
    );
  });
});
