import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { connect } from 'node:tls';
import { credentialFor, decideDestination } from '../../../src/egress/destination-policy.js';
import { isLoopbackAddress, isRestrictedAddress } from '../../../src/egress/restricted-addresses.js';
import { dnsAnswer, parseDnsQuery } from '../../../src/egress/dns-responder.js';
import { peekClientHello } from '../../../src/egress/tls-client-hello.js';
import { parseContract } from '../../../src/policy/session-contract.js';
import { isAirlockError } from '../../../src/core/errors.js';

const network = { allowedDomains: ['example.com', '*.github.com', 'registry.test:8443', '10.213.9.1:80'], deniedDomains: ['evil.github.com'] };

test('exact names, wildcards below a name, default ports 80/443, explicit ports, denied first', () => {
  assert.equal(decideDestination(network, 'example.com', 443).allowed, true);
  assert.equal(decideDestination(network, 'EXAMPLE.com.', 80).allowed, true, 'case and a trailing dot do not matter');
  assert.equal(decideDestination(network, 'www.example.com', 443).allowed, false, 'an exact name covers only itself');
  assert.equal(decideDestination(network, 'example.com', 22).allowed, false, 'a pattern without a port covers 80 and 443 only');
  assert.equal(decideDestination(network, 'api.github.com', 443).allowed, true);
  assert.equal(decideDestination(network, 'a.b.github.com', 443).allowed, true);
  assert.equal(decideDestination(network, 'github.com', 443).allowed, false, 'a wildcard does not cover its apex');
  assert.equal(decideDestination(network, 'registry.test', 8443).allowed, true);
  assert.equal(decideDestination(network, 'registry.test', 443).allowed, false);
  const denied = decideDestination(network, 'evil.github.com', 443);
  assert.equal(denied.allowed, false);
  assert.match(denied.reason, /deniedDomains entry "evil\.github\.com"/);
  assert.match(decideDestination(network, 'other.org', 443).reason, /not in this session's allowedDomains/);
  assert.equal(decideDestination(network, '10.213.9.1', 80).explicitAddress, true, 'an address in the list is allowed explicitly');
  assert.equal(decideDestination({}, 'example.com', 443).allowed, false, 'no list: nothing');
});

test('restricted ranges: loopback, private, link-local metadata, mapped IPv6; public addresses pass', () => {
  for (const address of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fd00::1', '::ffff:10.0.0.1', 'not-an-ip']) {
    assert.equal(isRestrictedAddress(address), true, address);
  }
  for (const address of ['93.184.216.34', '1.1.1.1', '2606:4700:4700::1111']) assert.equal(isRestrictedAddress(address), false, address);
  assert.equal(isLoopbackAddress('127.0.0.53'), true);
  assert.equal(isLoopbackAddress('::ffff:127.0.0.1'), true);
  assert.equal(isLoopbackAddress('10.0.0.1'), false);
});

test('credential bindings apply to HTTPS on the bound hosts only', () => {
  const credentials = [{ secret: 'GITHUB_TOKEN', hosts: ['api.github.com'], header: 'Authorization', format: 'Bearer {secret}' }];
  assert.equal(credentialFor(credentials, 'api.github.com', 443)?.secret, 'GITHUB_TOKEN');
  assert.equal(credentialFor(credentials, 'api.github.com', 80), undefined);
  assert.equal(credentialFor(credentials, 'uploads.github.com', 443), undefined);
});

function query(name: string, type = 1): Buffer {
  const labels = name.split('.').map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label)]));
  const tail = Buffer.alloc(4);
  tail.writeUInt16BE(type, 0);
  tail.writeUInt16BE(1, 2);
  return Buffer.concat([Buffer.from([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]), ...labels, Buffer.from([0]), tail]);
}

test('DNS: an allowed name resolves to the gateway, others are NXDOMAIN, AAAA is empty', () => {
  const parsed = parseDnsQuery(query('API.GitHub.com'));
  assert.ok(parsed);
  assert.equal(parsed.name, 'api.github.com');
  const answer = dnsAnswer(parsed, '10.200.0.7');
  assert.equal(answer.readUInt16BE(0), 0x1234);
  assert.equal(answer.readUInt16BE(2) & 0xf, 0, 'NOERROR');
  assert.equal(answer.readUInt16BE(6), 1, 'one answer');
  assert.deepEqual([...answer.subarray(answer.length - 4)], [10, 200, 0, 7]);
  assert.equal(dnsAnswer(parsed, undefined).readUInt16BE(2) & 0xf, 3, 'NXDOMAIN');
  const aaaa = parseDnsQuery(query('api.github.com', 28));
  assert.ok(aaaa);
  assert.equal(dnsAnswer(aaaa, '10.200.0.7').readUInt16BE(6), 0);
  assert.equal(parseDnsQuery(Buffer.from([1, 2, 3])), undefined);
});

test('the SNI of a real TLS ClientHello is read without decrypting anything', async () => {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const first = new Promise<Buffer>((resolve) => server.once('connection', (socket) => socket.once('data', (data: Buffer) => (resolve(data), socket.destroy()))));
  const client = connect({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, servername: 'api.github.com' });
  client.on('error', () => undefined);
  const bytes = await first;
  server.close();
  assert.deepEqual(peekClientHello(bytes), { kind: 'tls', serverName: 'api.github.com' });
  assert.deepEqual(peekClientHello(bytes.subarray(0, 20)), { kind: 'incomplete' });
  assert.deepEqual(peekClientHello(Buffer.from('GET / HTTP/1.1\r\n')), { kind: 'not-tls' });
});

test('the contract rejects credentials without a network section and malformed bindings', () => {
  const credential = { secret: 'TOKEN', hosts: ['api.github.com'], header: 'Authorization', format: 'Bearer {secret}' };
  assert.throws(() => parseContract({ version: 1, credentials: [credential] }), (error: unknown) => isAirlockError(error, 'INVALID_CONTRACT') && /network section/.test(String(error)));
  assert.throws(() => parseContract({ version: 1, network: { allowedDomains: ['api.github.com'] }, credentials: [{ ...credential, format: 'Bearer' }] }), /\{secret\}/);
  assert.throws(() => parseContract({ version: 1, network: { allowedDomains: ['http://x.com'] } }), (error: unknown) => isAirlockError(error, 'INVALID_CONTRACT'));
  const parsed = parseContract({ version: 1, network: { allowedDomains: ['api.github.com'] }, credentials: [credential] });
  assert.equal(parsed.credentials?.[0]?.secret, 'TOKEN');
});
