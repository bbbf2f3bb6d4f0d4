/**
 * Issue 6's "done when", end to end on the real driver: a server with a
 * stand-in internet (a namespace we create, see egress-fixture.ts), sessions
 * with and without a network section, the allowlist over HTTP and HTTPS, a
 * policy tightened while the session runs, and a credential that reaches
 * the bound host while the sandbox, its files and its memory image only ever
 * hold the placeholder.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestInstallation } from '../support/test-installation.js';
import { startEgressFixture, TEST_HOSTS, type EgressFixture } from '../support/egress-fixture.js';

const PRELUDE = String.raw`
import json, os, socket, ssl, urllib.request, urllib.error
def get(url, proxy=True, cafile=None):
    handlers = [] if proxy else [urllib.request.ProxyHandler({})]
    if url.startswith('https'):
        handlers.append(urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=cafile)))
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
def resolve(name):
    try:
        return socket.gethostbyname(name)
    except Exception as e:
        return 'error: ' + str(e)
`;

interface Fetched {
  status?: number;
  body?: string;
  error?: string;
}

describe('egress: per-session network through the gateway', () => {
  let fixture: EgressFixture;
  let installation: TestInstallation;
  const netnsBefore = listNetns();

  function python<T>(id: string, body: string): T {
    const result = installation.cli(['exec', id, '--stdin', '--', 'python3', '-'], { input: `${PRELUDE}\n${body}\n` });
    assert.equal(result.code, 0, `python failed: ${result.stderr}\n${result.stdout}`);
    return JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '{}') as T;
  }

  function createWith(contract: unknown): { code: number; id: string; stderr: string } {
    const file = join(installation.dataDir, `contract-${randomBytes(4).toString('hex')}.json`);
    execFileSync('sh', ['-c', `cat > ${file}`], { input: JSON.stringify(contract) });
    const created = installation.cli(['sessions', 'create', '--contract', file]);
    return { code: created.code, id: created.stdout.trim(), stderr: created.stderr };
  }

  function audit(id: string): { type: string; data: Record<string, unknown> }[] {
    const result = installation.cli(['audit', id, '--json']);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as { type: string; data: Record<string, unknown> }[];
  }

  before(async () => {
    fixture = await startEgressFixture(9);
    installation = await TestInstallation.start({ env: { AIRLOCK_EGRESS_CONFIG: fixture.configFile } });
  });
  after(async () => {
    await installation?.destroy();
    await fixture?.dispose();
    assert.deepEqual(
      listNetns().filter((name) => !netnsBefore.includes(name)),
      [],
      'every namespace was removed',
    );
  });

  it('without a network section nothing is reachable: not the targets, the host loopback or the Airlock API', () => {
    const { id } = createWith({ version: 1 });
    const probe = python<Record<string, string>>(
      id,
      `print(json.dumps({'target': tcp('${fixture.allowedAddress}', 80), 'hostside': tcp('${fixture.hostAddress}', 22), 'api': tcp('127.0.0.1', ${installation.port}), 'metadata': tcp('169.254.169.254', 80), 'gateway': tcp('10.200.0.1', 3128), 'dns': resolve('${TEST_HOSTS.allowed}'), 'links': open('/proc/net/dev').read()}))`,
    );
    for (const key of ['target', 'hostside', 'api', 'metadata', 'gateway']) assert.match(probe[key] ?? '', /^refused/, `${key}: ${probe[key]}`);
    assert.match(probe['dns'] ?? '', /^error/);
    assert.doesNotMatch(probe['links'] ?? '', /eth0/, 'the sandbox has loopback only');
  });

  it('with an allowlist: allowed hosts answer over HTTP and HTTPS, others get the gateway message, all audited; a tightened list applies at once', () => {
    const created = createWith({ version: 1, network: { allowedDomains: [TEST_HOSTS.allowed, `*.${TEST_HOSTS.allowed}`], deniedDomains: [TEST_HOSTS.other] } });
    assert.equal(created.code, 0, created.stderr);
    const id = created.id;
    const ca = readFileSync(fixture.caFile, 'utf8');
    assert.equal(installation.cli(['files', 'write', id, '/workspace/test-ca.pem'], { input: ca }).code, 0);
    const probe = python<Record<string, Fetched | string>>(
      id,
      `gw = os.environ['HTTP_PROXY'].split('//')[1].split(':')[0]
print(json.dumps({
  'http': get('http://${TEST_HOSTS.allowed}/hello'),
  'https': get('https://${TEST_HOSTS.allowed}/secure', cafile='/workspace/test-ca.pem'),
  'denied': get('http://${TEST_HOSTS.denied}/'),
  'deniedTls': get('https://${TEST_HOSTS.denied}/', cafile='/workspace/test-ca.pem'),
  'deniedList': get('http://${TEST_HOSTS.other}/'),
  'transparent': get('http://${TEST_HOSTS.allowed}/direct', proxy=False),
  'dnsAllowed': resolve('${TEST_HOSTS.allowed}'), 'dnsDenied': resolve('${TEST_HOSTS.denied}'), 'gw': gw,
  'bypass': tcp('${fixture.allowedAddress}', 80), 'api': tcp(gw, ${installation.port}), 'metadata': tcp('169.254.169.254', 80),
  'loopback': tcp('127.0.0.1', ${installation.port}), 'otherPort': tcp(gw, 22)}))`,
    );
    const http = probe['http'] as Fetched;
    assert.equal(http.status, 200, JSON.stringify(http));
    assert.equal(JSON.parse(http.body ?? '{}').host, TEST_HOSTS.allowed);
    const https = probe['https'] as Fetched;
    assert.equal(https.status, 200, JSON.stringify(https));
    assert.equal(JSON.parse(https.body ?? '{}').scheme, 'https');
    const denied = probe['denied'] as Fetched;
    assert.equal(denied.status, 403);
    assert.match(denied.body ?? '', /airlock egress gateway: connection to denied\.test:80 denied: .*not in this session's allowedDomains/);
    assert.match((probe['deniedTls'] as Fetched).error ?? '', /Tunnel connection failed: 403/);
    assert.match((probe['deniedList'] as Fetched).body ?? '', /deniedDomains entry "other\.allowed\.test"/);
    assert.equal((probe['transparent'] as Fetched).status, 200, 'a program ignoring the proxy lands on the gateway');
    assert.equal(probe['dnsAllowed'], probe['gw']);
    assert.match(String(probe['dnsDenied']), /^error/);
    for (const key of ['bypass', 'api', 'metadata', 'loopback', 'otherPort']) assert.match(String(probe[key]), /^refused/, `${key}: ${String(probe[key])}`);

    const records = audit(id);
    const connected = records.filter((r) => r.type === 'network.connected').map((r) => `${String(r.data['host'])}:${String(r.data['port'])}`);
    assert.ok(connected.includes('allowed.test:80') && connected.includes('allowed.test:443'), connected.join(' '));
    const refused = records.filter((r) => r.type === 'network.denied').map((r) => `${String(r.data['host'])}:${String(r.data['port'])}`);
    assert.ok(refused.includes('denied.test:80') && refused.includes('denied.test:443') && refused.includes('other.allowed.test:80'), refused.join(' '));
    assert.ok(records.some((r) => r.type === 'network.closed' && typeof r.data['bytesReceived'] === 'number' && (r.data['bytesReceived'] as number) > 0));

    const tightened = installation.cli(['network', 'set', id, '--allow', TEST_HOSTS.denied, '--json']);
    assert.equal(tightened.code, 0, tightened.stderr);
    assert.equal((JSON.parse(tightened.stdout) as { contractVersion: number }).contractVersion, 2);
    const after = python<Record<string, Fetched>>(
      id,
      `print(json.dumps({'old': get('http://${TEST_HOSTS.allowed}/'), 'new': get('http://${TEST_HOSTS.denied}/')}))`,
    );
    assert.equal(after['old']?.status, 403);
    assert.equal(after['new']?.status, 200);
    const update = audit(id).find((r) => r.type === 'contract.updated');
    assert.ok(update, 'contract.updated is audited');
    assert.equal(update.data['contractVersion'], 2);
    assert.equal(installation.cli(['sessions', 'rm', id]).code, 0);
  });

  it('with the gateway down the sandbox has no network at all; a restarted server reopens it', async () => {
    const created = createWith({ version: 1, network: { allowedDomains: [TEST_HOSTS.allowed] } });
    assert.equal(created.code, 0, created.stderr);
    const id = created.id;
    const request = `print(json.dumps({'r': get('http://${TEST_HOSTS.allowed}/'), 'direct': tcp('${fixture.allowedAddress}', 80)}))`;
    assert.equal(python<{ r: Fetched }>(id, request).r.status, 200);
    await installation.crashServer();
    // The control plane is gone: probe straight through runsc.
    const runscRoot = join(installation.dataDir, 'runsc', 'runsc');
    const output = execFileSync('runsc', [`--root=${runscRoot}`, 'exec', `airlock-airlock-${id}-g1`, 'python3', '-c', `${PRELUDE}\n${request}`], {
      encoding: 'utf8',
    });
    const down = JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as { r: Fetched; direct: string };
    assert.ok(down.r.error, `no answer while the gateway is down: ${JSON.stringify(down.r)}`);
    assert.match(down.direct, /^refused/);
    await installation.startServer();
    assert.equal(python<{ r: Fetched }>(id, request).r.status, 200, 'the restarted server reopened the gateway');
    assert.equal(installation.cli(['sessions', 'rm', id]).code, 0);
  });

  it('a bound host gets the real token; env, files and the memory image hold only the placeholder; resume keeps the network; a deleted secret fails clearly', () => {
    const token = `sekret-${randomBytes(12).toString('hex')}`;
    const placeholder = 'airlock-placeholder-TEST_TOKEN';
    const credentials = [{ secret: 'TEST_TOKEN', hosts: [TEST_HOSTS.bound], header: 'Authorization', format: 'Bearer {secret}' }];
    const contract = { version: 1, network: { allowedDomains: [TEST_HOSTS.bound] }, credentials };
    const unknown = createWith(contract);
    assert.notEqual(unknown.code, 0, 'a binding to an unknown secret is refused');
    assert.match(unknown.stderr, /INVALID_CONTRACT[\s\S]*no secret named TEST_TOKEN/);

    const set = installation.cli(['secrets', 'set', 'TEST_TOKEN'], { input: `${token}\n` });
    assert.equal(set.code, 0, set.stderr);
    assert.doesNotMatch(installation.cli(['secrets', 'ls', '--json']).stdout, new RegExp(token));
    const created = createWith(contract);
    assert.equal(created.code, 0, created.stderr);
    const id = created.id;
    const expected = `sha256:${createHash('sha256').update(`Bearer ${token}`).digest('hex')}`;
    const request = `print(json.dumps({'r': get('https://${TEST_HOSTS.bound}/user'), 'env': os.environ.get('TEST_TOKEN')}))`;
    const first = python<{ r: Fetched; env: string }>(id, request);
    assert.equal(first.r.status, 200, JSON.stringify(first.r));
    assert.equal(JSON.parse(first.r.body ?? '{}').headers.authorization, expected, 'the server received the real token');
    assert.equal(first.env, placeholder);

    const env = installation.cli(['exec', id, '--', 'env']);
    assert.match(env.stdout, new RegExp(placeholder));
    assert.doesNotMatch(env.stdout, new RegExp(token));
    // Grepping inside the sandbox means sending the needle in: send only a prefix of the (synthetic) token.
    const prefix = token.slice(0, 18);
    // The needle goes in as two halves joined by the shell, so the command's own script never holds it.
    const half = Math.floor(prefix.length / 2);
    const search = (needle: string, root: string) =>
      `n='${needle.slice(0, half)}''${needle.slice(half)}'; grep -rlsa --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev -e "$n" ${root}; echo searched`;
    // The same search must find what is there, or a grep that failed to run would pass as "found nothing".
    const control = installation.cli(['exec', id, '--', 'sh', '-c', search('root:x:0:0', '/etc')]).stdout;
    assert.match(control, /^\/etc\/passwd$/m, `the search works: ${control}`);
    const grep = installation.cli(['exec', id, '--', 'sh', '-c', search(prefix, '/')]);
    assert.equal(grep.stdout, 'searched\n', `no file in the sandbox holds the token: ${grep.stdout}`);
    // The sandbox's files on the host: its root-layer overlay and /workspace live on the session disk.
    assert.equal(spawnGrep(token, join(installation.dataDir, 'disks')), false, 'the session disk never holds the token');
    for (const text of [JSON.stringify(audit(id)), installation.cli(['sessions', 'get', id, '--json']).stdout]) assert.doesNotMatch(text, new RegExp(token));

    const suspended = installation.cli(['sessions', 'suspend', id]);
    assert.equal(suspended.code, 0, `a networked session suspends: ${suspended.stderr}`);
    const images = join(installation.dataDir, 'snapshots');
    const memory = readdirSync(images).filter((name) => !name.endsWith('.json'));
    assert.ok(memory.length > 0, 'a memory image exists');
    const inImage = (needle: string) => spawnGrep(needle, images);
    assert.equal(inImage(token), false, 'the memory image never holds the token');
    assert.equal(inImage(placeholder), true, 'the memory image holds the placeholder (the grep does see the sandbox memory)');

    const resumed = python<{ r: Fetched; env: string }>(id, request);
    assert.equal(JSON.parse(resumed.r.body ?? '{}').headers.authorization, expected, 'after resume the network and the injection still work');

    assert.equal(installation.cli(['secrets', 'rm', 'TEST_TOKEN']).code, 0);
    const gone = python<{ r: Fetched }>(id, request);
    assert.equal(gone.r.status, 502);
    assert.match(gone.r.body ?? '', /the secret TEST_TOKEN bound to api\.bound\.test was deleted/);
  });
});

function listNetns(): string[] {
  return execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter(Boolean);
}

function spawnGrep(needle: string, dir: string): boolean {
  try {
    execFileSync('grep', ['-rqaF', '-e', needle, dir]);
    return true;
  } catch {
    return false;
  }
}
