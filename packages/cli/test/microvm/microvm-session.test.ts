/**
 * Issue 17's "done when", end to end through the CLI against a real server
 * process and the real microvm driver (QEMU, software emulation on hosts
 * without a usable KVM), on the Debian image: create, exec, files; suspend →
 * server restart → resume with a running process intact; fork into 3
 * branches whose /dev/urandom, hostname and machine id differ from each
 * other and from the parent, each using far less host memory than its
 * guest's RAM; the driver, kernel and image digests in the audit log.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { TestInstallation, hostProcessesMatching } from '../support/test-installation.js';

const IDENTITY = "hostname; cat /etc/machine-id; head -c16 /dev/urandom | od -An -tx1 | tr -d ' \\n'";
const GUEST_RAM_MB = 512;

interface View {
  id: string;
  state: string;
  sandbox: string;
  sandboxId: string | null;
  lineage: { parentSessionId: string; branchIndex: number } | null;
}

/** Proportional set size of the QEMU process of a session's machine, in bytes. */
function qemuPss(sandboxId: string): number {
  const lines = hostProcessesMatching(`airlock-${sandboxId} `).filter((line) => line.includes('qemu-system'));
  assert.equal(lines.length, 1, `expected one QEMU for ${sandboxId}: ${lines.join('\n')}`);
  const pid = (lines[0] ?? '').trim().split(/\s+/)[0];
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  return Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1]) * 1024;
}

describe('microVM sessions end to end', () => {
  let installation: TestInstallation;
  before(async () => {
    installation = await TestInstallation.start();
  });
  after(async () => {
    await installation?.destroy();
  });

  const cli = (args: string[], input?: string): string => {
    const result = installation.cli(args, input === undefined ? {} : { input });
    assert.equal(result.code, 0, `airlock ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
    return result.stdout;
  };
  const view = (id: string): View => JSON.parse(cli(['sessions', 'get', id, '--json'])) as View;

  it('creates, runs, suspends across a server restart, resumes and forks microVM sessions', async (t) => {
    const created = JSON.parse(cli(['sessions', 'create', '--sandbox', 'microvm', '--json'])) as View;
    assert.equal(created.state, 'running');
    assert.equal(created.sandbox, 'microvm');
    const id = created.id;
    assert.match(cli(['sessions', 'get', id]), /sandbox\s+microvm vm-/);

    // Its own kernel: Debian's cloud kernel, not the host's.
    const kernel = cli(['exec', id, '--', 'uname', '-r']).trim();
    assert.match(kernel, /-cloud-amd64$/);
    assert.notEqual(kernel, readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim());
    assert.equal(cli(['exec', id, '--', 'python3', '-c', 'print(6*7)']), '42\n');

    cli(['files', 'write', id, 'notes.txt'], 'hello from the host\n');
    assert.equal(cli(['files', 'read', id, 'notes.txt']), 'hello from the host\n');
    assert.match(cli(['files', 'ls', id]), /notes\.txt/);
    assert.equal(cli(['exec', id, '--', 'cat', '/workspace/notes.txt']), 'hello from the host\n');

    const detached = cli(['exec', id, '--detach', '--', 'sh', '-c', 'i=0; while :; do i=$((i+1)); echo $i > /tmp/counter; sleep 0.2; done']);
    const pid = /\d+/.exec(detached)?.[0];
    assert.ok(pid, `no pid in ${detached}`);
    const counter = (): number => Number(cli(['exec', id, '--', 'sh', '-c', `kill -0 ${pid} && cat /tmp/counter`]).trim());
    const before = counter();

    cli(['sessions', 'suspend', id]);
    assert.equal(view(id).state, 'suspended');
    assert.deepEqual(hostProcessesMatching(`airlock-vm-${id}-`), [], 'a suspended session holds no VM');
    await installation.stopServer();
    await installation.startServer();
    assert.equal(view(id).state, 'suspended', 'still suspended after the restart');
    // The next call resumes it: the process runs on from where it was, and the file is there.
    const after = counter();
    assert.ok(after >= before, `the counter went back: ${before} → ${after}`);
    assert.equal(view(id).state, 'running');
    assert.equal(cli(['files', 'read', id, 'notes.txt']), 'hello from the host\n');
    const later = Number(
      cli(['exec', id, '--', 'sh', '-c', `n=$(cat /tmp/counter); i=0; while [ "$(cat /tmp/counter)" = "$n" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; cat /tmp/counter`]).trim(),
    );
    assert.ok(later > after, `the resumed process does not run: ${after} → ${later}`);

    const forked = JSON.parse(cli(['sessions', 'fork', id, '--count', '3', '--json'])) as View[];
    assert.equal(forked.length, 3);
    assert.ok(forked.every((branch) => branch.state === 'running' && branch.sandbox === 'microvm' && branch.lineage?.parentSessionId === id));
    const identities = [id, ...forked.map((branch) => branch.id)].map((session) => cli(['exec', session, '--', 'sh', '-c', IDENTITY]).trim().split('\n'));
    for (const [line, what] of [[0, 'hostname'], [1, 'machine id'], [2, '/dev/urandom']] as const) {
      const values = identities.map((identity) => identity[line]);
      assert.equal(new Set(values).size, 4, `${what} differs across the branches and from the parent: ${JSON.stringify(values)}`);
    }
    for (const branch of forked) {
      assert.equal(cli(['exec', branch.id, '--', 'sh', '-c', `kill -0 ${pid} && echo alive`]).trim(), 'alive', 'the branch carries the running process');
      const pss = qemuPss(view(branch.id).sandboxId ?? '');
      t.diagnostic(`branch ${branch.lineage?.branchIndex}: QEMU PSS ${Math.round(pss / 1048576)} MB for a ${GUEST_RAM_MB} MB guest`);
      assert.ok(pss < (GUEST_RAM_MB * 1024 * 1024) / 2, `a branch takes ${Math.round(pss / 1048576)} MB of host memory (PSS) for a ${GUEST_RAM_MB} MB guest`);
    }

    // A restart with the machines running: the new server adopts them and reaches their agents again.
    await installation.stopServer();
    await installation.startServer();
    for (const session of [id, forked[0]?.id ?? '']) {
      assert.equal(view(session).state, 'running', `${session} was not adopted`);
      assert.equal(cli(['exec', session, '--', 'sh', '-c', `kill -0 ${pid} && echo alive`]).trim(), 'alive');
    }

    const audit = JSON.parse(cli(['audit', id, '--json'])) as { type: string; data: Record<string, unknown> }[];
    const started = audit.find((record) => record.type === 'session.started');
    assert.equal(audit.find((record) => record.type === 'session.created')?.data['sandbox'], 'microvm');
    assert.equal(started?.data['driver'], 'microvm');
    assert.match(String(started?.data['kernelDigest']), /^sha256:[0-9a-f]{64}$/);
    assert.match(String(started?.data['imageDigest']), /^sha256:[0-9a-f]{64}$/);
    assert.match(cli(['audit', 'verify', id]), /^ok: /);

    for (const session of [id, ...forked.map((branch) => branch.id)]) {
      cli(['sessions', 'rm', session]);
      assert.deepEqual(hostProcessesMatching(`airlock-vm-${session}-`), [], `a VM of ${session} is left`);
    }
  });

  it('runs a per-call microVM session: each call a fresh VM over the same disk', () => {
    const id = cli(['sessions', 'create', '--sandbox', 'microvm', '--mode', 'per-call']).trim();
    assert.equal(cli(['exec', id, '--', 'sh', '-c', 'echo persisted > /workspace/kept.txt; echo root > /etc/not-kept; hostname']).trim(), id.replace(/_/g, '-'));
    assert.equal(cli(['exec', id, '--', 'sh', '-c', 'cat /workspace/kept.txt; cat /etc/not-kept 2>/dev/null || echo gone']), 'persisted\ngone\n');
    cli(['sessions', 'rm', id]);
    assert.deepEqual(hostProcessesMatching(`airlock-vm-${id}-`), []);
  });

  it('refuses what a microVM cannot do, and says so', () => {
    const id = cli(['sessions', 'create', '--sandbox', 'microvm']).trim();
    const resize = installation.cli(['sessions', 'resize', id, '--memory', '1G']);
    assert.equal(resize.code, 1);
    assert.match(resize.stderr, /INVALID_STATE: .*microvm driver, which cannot resize/);
    const ephemeral = installation.cli(['exec', id, '--ephemeral', '--', 'true']);
    assert.equal(ephemeral.code, 1);
    assert.match(ephemeral.stderr, /INVALID_STATE: .*without --ephemeral/);
    const unknown = installation.cli(['sessions', 'create', '--sandbox', 'firecracker']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /INVALID_ARGUMENTS: .*gvisor, microvm/);
    cli(['sessions', 'rm', id]);
  });
});
