/**
 * Egress for microVM sessions, end to end: the same gateway and firewall as
 * gVisor (a tap bridged to the sandbox's veth in its namespace), the
 * allowlist over HTTP, nothing reachable around the gateway, and the same
 * behaviour after a suspend and resume (the restored guest is moved to its
 * new namespace and address before anything runs). Targets live in a
 * namespace the test makes (egress-fixture.ts).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startEgressFixture, TEST_HOSTS, type EgressFixture } from '../support/egress-fixture.js';
import { TestInstallation } from '../support/test-installation.js';

const PROBE = String.raw`
import json, os, socket, urllib.request, urllib.error
def get(url, proxy=True):
    handlers = [] if proxy else [urllib.request.ProxyHandler({})]
    try:
        with urllib.request.build_opener(*handlers).open(url, timeout=15) as r:
            return {'status': r.status, 'body': r.read().decode()}
    except urllib.error.HTTPError as e:
        return {'status': e.code, 'body': e.read().decode()}
    except Exception as e:
        return {'error': str(e)}
def tcp(host, port):
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect((host, port)); return 'connected'
    except Exception as e:
        return 'refused: ' + str(e)
    finally:
        s.close()
`;

describe('egress of microVM sessions', () => {
  let fixture: EgressFixture;
  let installation: TestInstallation;
  const netnsBefore = readdirSync('/var/run/netns').sort();

  before(async () => {
    fixture = await startEgressFixture(11);
    installation = await TestInstallation.start({ env: { AIRLOCK_EGRESS_CONFIG: fixture.configFile } });
  });
  after(async () => {
    await installation?.destroy();
    await fixture?.dispose();
    assert.deepEqual(readdirSync('/var/run/netns').sort(), netnsBefore, 'every namespace was removed');
  });

  const probe = (id: string): Record<string, { status?: number; body?: string; error?: string } | string> => {
    const body = `print(json.dumps({'allowed': get('http://${TEST_HOSTS.allowed}/hello'), 'denied': get('http://${TEST_HOSTS.denied}/'),
  'transparent': get('http://${TEST_HOSTS.allowed}/direct', proxy=False), 'bypass': tcp('${fixture.allowedAddress}', 80), 'api': tcp('127.0.0.1', ${installation.port})}))`;
    const result = installation.cli(['exec', id, '--stdin', '--', 'python3', '-'], { input: `${PROBE}\n${body}\n` });
    assert.equal(result.code, 0, `python failed: ${result.stderr}\n${result.stdout}`);
    return JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, string>;
  };

  it('reaches allowed hosts through the gateway only, before and after a suspend and resume', () => {
    const file = join(installation.dataDir, `contract-${randomBytes(4).toString('hex')}.json`);
    execFileSync('sh', ['-c', `cat > ${file}`], { input: JSON.stringify({ version: 1, sandbox: 'microvm', network: { allowedDomains: [TEST_HOSTS.allowed] } }) });
    const created = installation.cli(['sessions', 'create', '--contract', file, '--json']);
    assert.equal(created.code, 0, created.stderr);
    const id = (JSON.parse(created.stdout) as { id: string; sandbox: string }).id;
    for (const when of ['after boot', 'after a suspend and resume']) {
      const seen = probe(id);
      const allowed = seen['allowed'] as { status?: number; body?: string };
      assert.equal(allowed.status, 200, `${when}: ${JSON.stringify(allowed)}`);
      assert.equal(JSON.parse(allowed.body ?? '{}').host, TEST_HOSTS.allowed);
      assert.equal((seen['denied'] as { status?: number }).status, 403, `${when}: a host off the list is refused by the gateway`);
      assert.equal((seen['transparent'] as { status?: number }).status, 200, `${when}: a program ignoring the proxy lands on the gateway`);
      assert.match(String(seen['bypass']), /^refused/, `${when}: the target is unreachable around the gateway`);
      assert.match(String(seen['api']), /^refused/, `${when}: the host's loopback is not the guest's`);
      if (when === 'after boot') assert.equal(installation.cli(['sessions', 'suspend', id]).code, 0);
    }
    const audit = JSON.parse(installation.cli(['audit', id, '--json']).stdout) as { type: string; data: Record<string, unknown> }[];
    assert.ok(audit.some((record) => record.type === 'network.connected' && record.data['host'] === TEST_HOSTS.allowed), 'connections are audited');
    assert.equal(installation.cli(['sessions', 'rm', id]).code, 0);
  });
});
