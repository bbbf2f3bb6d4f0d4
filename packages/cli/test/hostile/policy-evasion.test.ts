/**
 * Hostile suite: policy evasion (issue 12, "Why" point 5). A session under
 * the strictest contract one can write with the documented keys: deletion
 * programs forbidden by name, commands nobody can read refused, a read-only
 * dir, a denied-write dir, a denied-read dir, writes allowed only under
 * /workspace and /tmp. The agent tries to delete or read what those rules
 * protect by every route the docs name as a blind spot of the command
 * analysis: the exec's environment, variables set in the command line,
 * renamed binaries, interpreters, scripts, redirections, symlinks and a user
 * namespace of its own.
 *
 * The exec's environment is refused now (contract.exec.allowEnv). For the
 * others the guarantee is the filesystem rules enforced by the sandbox's own
 * mounts (issue 12 item 3); until that lands they are marked todo. Every
 * attack also runs in a control session without filesystem rules (and with
 * the variables allowed), where it must succeed: the attack is real.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestInstallation } from '../support/test-installation.js';
import { HostileApi, needle, type Answer } from '../support/hostile-kit.js';

const PROTECTED = 'protected by the contract\n';

const POLICIES = [
  'permit(principal, action, resource);',
  '@id("no-deletion") forbid(principal, action == Airlock::Action::"exec", resource) when { context.programs.containsAny(["rm", "shred", "unlink", "rmdir", "truncate", "find", "mv", "dd"]) };',
  '@id("readable-commands-only") forbid(principal, action == Airlock::Action::"exec", resource) unless { context.analysable };',
];

/** The strictest contract the documented keys allow, for a session that must still be able to work. */
const STRICT = {
  version: 1,
  idle: { keepAwake: true },
  filesystem: { readOnly: ['/workspace/keep'], denyWrite: ['/workspace/locked'], denyRead: ['/workspace/private'], allowWrite: ['/workspace', '/tmp'] },
  policies: POLICIES,
};

/** The same policies without filesystem rules, and with the variables allowed: where every attack must work. */
const LOOSE = { version: 1, idle: { keepAwake: true }, exec: { allowEnv: ['BASH_ENV', 'PATH', 'LD_PRELOAD', 'PYTHONSTARTUP'] }, policies: POLICIES };

describe('hostile: what the policy cannot see cannot get past the contract\'s filesystem rules', { timeout: 600_000 }, () => {
  let installation: TestInstallation;
  let api: HostileApi;
  let strict = '';
  let loose = '';
  const token = needle('private-token');

  const onHost = (sessionId: string, path: string): string => join(installation.dataDir, 'disks', sessionId, 'mnt', path);
  /** Puts the protected files in place from the host, as a checkout would be: no call of the session writes them. */
  const protect = (sessionId: string): void => {
    for (const [path, content] of [
      ['workspace/keep/file', PROTECTED],
      ['workspace/locked/file', PROTECTED],
      ['workspace/private/token', token.value],
    ] as const) {
      mkdirSync(join(onHost(sessionId, path), '..'), { recursive: true });
      writeFileSync(onHost(sessionId, path), content);
    }
  };
  const intact = (sessionId: string, path = 'workspace/keep/file'): boolean => {
    try {
      return readFileSync(onHost(sessionId, path), 'utf8') === PROTECTED;
    } catch {
      return false;
    }
  };
  const exec = (sessionId: string, args: Record<string, unknown>): Promise<Answer> => api.tool(sessionId, 'exec', { timeoutMs: 60_000, ...args });
  /** The attack runs in the loose session and deletes or empties its file: it is a real attack. */
  const assertRealAttack = async (args: Record<string, unknown>, what: string): Promise<void> => {
    protect(loose);
    const answer = await exec(loose, args);
    assert.equal(answer.code, 'ok', `control (${what}): ${answer.code} ${answer.message}`);
    assert.equal(intact(loose), false, `control (${what}): without filesystem rules the attack changes the file (${JSON.stringify(answer.result).slice(0, 300)})`);
  };
  /** Under the strict contract the file survives, whether the call was refused or ran. */
  const assertSurvives = async (args: Record<string, unknown>, what: string): Promise<Answer> => {
    protect(strict);
    const answer = await exec(strict, args);
    assert.ok(intact(strict), `${what}: the protected file was changed (the call answered ${answer.code}, exit ${String(answer.result['exitCode'])})`);
    return answer;
  };
  const assertDenied = (answer: Answer, policyId: string, what: string): void => {
    assert.equal(answer.code, 'POLICY_DENIED', `${what}: ${answer.code} ${answer.message}`);
    const decision = answer.body['error'] as { details?: { decision?: { policyIds?: string[] } } } | undefined;
    assert.ok(decision?.details?.decision?.policyIds?.includes(policyId), `${what} is denied by ${policyId}: ${JSON.stringify(decision?.details?.decision)}`);
  };

  before(async () => {
    installation = await TestInstallation.start();
    api = new HostileApi(installation);
    [strict, loose] = await Promise.all([api.createSession(STRICT), api.createSession(LOOSE)]);
    const tools = "mkdir -p /workspace/scratch/bin && cp /bin/rm /workspace/scratch/bin/cat && printf 'rm -f /workspace/keep/file\\n' > /workspace/scratch/evil.sh && printf '#!/bin/sh\\nrm -f /workspace/keep/file\\n' > /workspace/scratch/clean && chmod +x /workspace/scratch/clean";
    await Promise.all([api.sh(strict, tools), api.sh(loose, tools)]);
    protect(strict);
    assert.ok(intact(strict), 'control: the protected file is in place');
  });

  after(async () => {
    await installation?.destroy();
  });

  it('BASH_ENV in the exec\'s environment is refused, and nothing is deleted', async () => {
    const attack = { command: 'bash -c "cat /workspace/keep/file"', env: { BASH_ENV: '/workspace/scratch/evil.sh' } };
    await assertRealAttack(attack, 'BASH_ENV');
    assertDenied(await assertSurvives(attack, 'BASH_ENV'), 'contract.exec.allowEnv', 'BASH_ENV');
  });

  it('a PATH whose first directory holds rm named cat is refused, and nothing is deleted', async () => {
    const attack = { command: 'cat /workspace/keep/file', env: { PATH: '/workspace/scratch/bin:/usr/bin:/bin' } };
    await assertRealAttack(attack, 'PATH');
    assertDenied(await assertSurvives(attack, 'PATH'), 'contract.exec.allowEnv', 'PATH');
  });

  it('loader and interpreter start-up variables are refused by family: LD_*, PYTHON* (PYTHONWARNINGS, PYTHONBREAKPOINT, PYTHONPLATLIBDIR too), PERL* (PERL_MB_OPT too), NODE_*', async () => {
    for (const name of ['LD_PRELOAD', 'LD_LIBRARY_PATH', 'PYTHONSTARTUP', 'PYTHONPATH', 'PERL5OPT', 'NODE_OPTIONS', 'PYTHONWARNINGS', 'PYTHONBREAKPOINT', 'PYTHONPLATLIBDIR', 'PERL_MB_OPT']) {
      assertDenied(await assertSurvives({ command: 'python3 -c "print(1)"', env: { [name]: '/workspace/scratch/evil' } }, name), 'contract.exec.allowEnv', name);
    }
    const allowed = await exec(strict, { command: 'echo "$GREETING"', env: { GREETING: 'hello' } });
    assert.equal(allowed.result['stdout'], 'hello\n', 'control: an ordinary variable passes');
  });

  it('exported bash functions in the environment are refused, whatever their name', async () => {
    const invalid = await assertSurvives({ command: 'bash -c "cat /workspace/keep/file"', env: { 'BASH_FUNC_cat%%': '() { rm -f /workspace/keep/file; }' } }, 'BASH_FUNC_cat%%');
    assert.equal(invalid.code, 'INVALID_ARGUMENTS', `a name bash would import as a function is not a valid name: ${invalid.code}`);
    assertDenied(await assertSurvives({ command: 'bash -c "cat /workspace/keep/file"', env: { BASH_FUNC_cat: '() { rm -f /workspace/keep/file; }' } }, 'BASH_FUNC_cat'), 'contract.exec.allowEnv', 'BASH_FUNC_cat');
  });

  it('commands dash reads otherwise than bash, or that no reader models, are refused, and nothing is deleted (issue 22)', async () => {
    // No filesystem rule covers /workspace/scratch: only the analysis stands between these and the file.
    const target = '/workspace/scratch/F';
    const commands = [
      `echo x \r#; rm -f ${target}`,
      `echo $'\\' ; rm -f ${target}\necho '`,
      `[[ x; rm -f ${target}; ]]`,
      `((rm -f ${target}) )`,
      `echo \${x:-{}; rm -f ${target}\n}`,
      `bash -c "coproc NAME { rm -f ${target}; }"`,
      `echo ${target} | xargs --replace rm -f {}`,
      `env -S 'rm\\_-f\\_${target}'`,
    ];
    for (const command of commands) {
      writeFileSync(onHost(strict, target.slice(1)), PROTECTED);
      const answer = await exec(strict, { command });
      assert.equal(answer.code, 'POLICY_DENIED', `${JSON.stringify(command)}: ${answer.code} ${answer.message}`);
      assert.equal(readFileSync(onHost(strict, target.slice(1)), 'utf8'), PROTECTED, `${JSON.stringify(command)}: the file was deleted`);
    }
  });

  it('deletion programs named anywhere in a command are refused, through wrappers too', async () => {
    for (const command of ['ls; rm -rf /workspace/keep', 'env rm /workspace/keep/file', 'echo /workspace/keep/file | xargs rm', 'find /workspace/keep -delete', 'busybox rm /workspace/keep/file', 'sh -c "mv /workspace/keep/file /tmp/gone"']) {
      assertDenied(await assertSurvives({ command }, command), 'no-deletion', command);
    }
  });

  it('commands nobody can read ahead of time are refused: eval, computed names, scripts run by a shell', async () => {
    for (const command of ['eval "r""m -f /workspace/keep/file"', '$(printf rm) -f /workspace/keep/file', 'sh /workspace/scratch/evil.sh', '. /workspace/scratch/evil.sh']) {
      assertDenied(await assertSurvives({ command }, command), 'readable-commands-only', command);
    }
  });

  it('the files API refuses every protected path: readOnly, denyWrite, denyRead, and writes outside allowWrite', async () => {
    protect(strict);
    const refusals: [string, Record<string, unknown>][] = [
      ['files.remove', { path: '/workspace/keep/file' }],
      ['files.write', { path: '/workspace/keep/file', content: 'x' }],
      ['files.edit', { path: '/workspace/keep/file', oldString: 'protected', newString: 'gone' }],
      ['files.write', { path: '/workspace/locked/file', content: 'x' }],
      ['files.read', { path: '/workspace/private/token' }],
      ['files.write', { path: '/opt/planted', content: 'x' }],
      ['files.mkdir', { path: '/etc/planted' }],
    ];
    for (const [tool, args] of refusals) {
      const answer = await api.tool(strict, tool, args);
      assert.equal(answer.code, 'POLICY_DENIED', `${tool} ${String(args['path'])}: ${answer.code}`);
      assert.ok(!JSON.stringify(answer.body).includes(token.value));
    }
    assert.ok(intact(strict) && intact(strict, 'workspace/locked/file'));
    assert.equal((await api.tool(strict, 'files.write', { path: '/workspace/scratch/ok.txt', content: 'fine' })).code, 'ok', 'control: writes where allowed pass');
  });

  it('files.write onto a symlink that points into a read-only dir replaces the link, not the protected file', async () => {
    protect(strict);
    await api.sh(strict, 'ln -sfn /workspace/keep/file /workspace/scratch/to-keep');
    assert.equal((await api.tool(strict, 'files.write', { path: '/workspace/scratch/to-keep', content: 'replaced the link' })).code, 'ok');
    assert.ok(intact(strict), 'the protected file is unchanged');
    assert.equal((await api.tool(strict, 'files.stat', { path: '/workspace/scratch/to-keep' })).result['type'], 'file', 'the link itself was replaced');
  });

  it('BASH_ENV set inside the command line does not delete a read-only file', async () => {
    const attack = { command: 'BASH_ENV=/workspace/scratch/evil.sh bash -c "cat /workspace/keep/file"' };
    await assertRealAttack(attack, 'BASH_ENV in the command line');
    await assertSurvives(attack, 'BASH_ENV in the command line');
  });

  it('a PATH set inside the command line does not turn cat into rm on a read-only file', async () => {
    const attack = { command: 'PATH=/workspace/scratch/bin:$PATH cat /workspace/keep/file' };
    await assertRealAttack(attack, 'PATH in the command line');
    await assertSurvives(attack, 'PATH in the command line');
  });

  it('a renamed rm (reported as programs cp and zap) does not delete a read-only file', async () => {
    const attack = { command: 'cp /bin/rm /tmp/zap; /tmp/zap -f /workspace/keep/file' };
    await assertRealAttack(attack, 'renamed rm');
    await assertSurvives(attack, 'renamed rm');
  });

  it('an interpreter does not delete a read-only file', async () => {
    const attack = { command: 'python3 -c "import os; os.remove(\'/workspace/keep/file\')"' };
    await assertRealAttack(attack, 'python3');
    await assertSurvives(attack, 'python3');
  });

  it('a script the agent wrote earlier, run by its path, does not delete a read-only file', async () => {
    const attack = { command: '/workspace/scratch/clean' };
    await assertRealAttack(attack, 'a script');
    await assertSurvives(attack, 'a script');
  });

  it('deleting without a deletion program (a redirection, cp of /dev/null) does not empty a read-only file', async () => {
    for (const command of [': > /workspace/keep/file', 'cp /dev/null /workspace/keep/file']) {
      await assertRealAttack({ command }, command);
      await assertSurvives({ command }, command);
    }
  });

  it('a command writing through a symlink it made does not change a denyWrite file', async () => {
    protect(strict);
    await exec(strict, { command: 'ln -sfn /workspace/locked/file /workspace/scratch/to-locked && echo clobbered > /workspace/scratch/to-locked' });
    assert.ok(intact(strict, 'workspace/locked/file'), 'the denyWrite file is unchanged');
  });

  it('a command cannot read a denyRead file: cat, an interpreter, a copy', async () => {
    protect(strict);
    const read = await exec(strict, { command: 'cat /workspace/private/token; python3 -c "print(open(\'/workspace/private/token\').read())"; cp /workspace/private/token /workspace/scratch/copy; cat /workspace/scratch/copy' });
    assert.ok(!JSON.stringify(read.body).includes(token.value), `a command read the denied file: ${String(read.result['stdout']).slice(0, 200)}`);
  });

  it('a command cannot write outside allowWrite', async () => {
    await exec(strict, { command: 'echo planted > /opt/planted; echo planted > /etc/planted' });
    const check = await exec(strict, { command: 'cat /opt/planted /etc/planted' });
    assert.doesNotMatch(String(check.result['stdout']), /planted/, 'nothing was written outside /workspace and /tmp');
  });

  it('a running session\'s filesystem lists cannot be changed to lift a rule: refused with the reason, nothing changes', async () => {
    const before = await api.request('GET', `/v1/sessions/${strict}/contract`);
    const widened = await api.request('PATCH', `/v1/sessions/${strict}/contract`, { filesystem: { ...STRICT.filesystem, readOnly: [], allowWrite: ['/'] } });
    assert.equal(widened.code, 'INVALID_STATE', `${widened.status} ${widened.message}`);
    assert.match(widened.message, /filesystem\.readOnly, filesystem\.allowWrite .*cannot change.*new session/);
    const unchanged = await api.request('PATCH', `/v1/sessions/${strict}/contract`, { filesystem: STRICT.filesystem });
    assert.equal(unchanged.status, 200, `control: the same lists are accepted as a no-op: ${unchanged.message}`);
    const after = await api.request('GET', `/v1/sessions/${strict}/contract`);
    assert.deepEqual(after.body, before.body, 'the contract and its version are unchanged');
    await assertSurvives({ command: ': > /workspace/keep/file' }, 'a write after the refused change');
  });

  it('a user and mount namespace of its own cannot lift the read-only mount: remount, unmount, mount over', async () => {
    const attack = {
      argv: [
        'python3',
        '-c',
        [
          'import ctypes, os',
          'libc = ctypes.CDLL(None, use_errno=True)',
          'libc.unshare(0x10000000 | 0x00020000)',
          "libc.mount(None, b'/workspace/keep', None, ctypes.c_ulong(32 | 4096), None)",
          "libc.umount2(b'/workspace/keep', 2)",
          "libc.mount(b'none', b'/workspace/keep', b'tmpfs', ctypes.c_ulong(0), None)",
          "libc.umount2(b'/workspace/keep', 2)",
          "os.remove('/workspace/keep/file')",
        ].join('\n'),
      ],
    };
    await assertRealAttack(attack, 'a user namespace');
    await assertSurvives(attack, 'a user namespace');
  });
});
