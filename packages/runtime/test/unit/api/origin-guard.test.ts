/** Which Origin and Host headers a server accepts, by the address it listens on and its --allowed-origin / --allowed-host. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { OriginGuard, listFromEnvironment, normalizeAllowedOrigin, parseAllowedHost } from '../../../src/api/origin-guard.js';
import { AirlockError } from '../../../src/core/errors.js';

const PORT = 7070;
const code = (guard: OriginGuard, headers: { host?: string; origin?: string }) => guard.check(headers, PORT)?.code ?? 'ok';

describe('OriginGuard on a loopback listener', () => {
  const guard = new OriginGuard({ listenHost: '127.0.0.1' });

  it('passes requests without Origin (CLI, SDK) and its own origins under every loopback name', () => {
    assert.equal(code(guard, { host: '127.0.0.1:7070' }), 'ok');
    assert.equal(code(guard, {}), 'ok');
    for (const origin of ['http://127.0.0.1:7070', 'http://localhost:7070', 'http://[::1]:7070', 'HTTP://LOCALHOST:7070']) {
      assert.equal(code(guard, { host: '127.0.0.1:7070', origin }), 'ok', origin);
    }
  });

  it('refuses foreign origins with ORIGIN_FORBIDDEN and a message that says how to allow one', () => {
    for (const origin of ['http://evil.example.com', 'http://localhost:7071', 'https://localhost', 'null', 'file://', 'chrome-extension://abc', 'not a url']) {
      assert.equal(code(guard, { host: '127.0.0.1:7070', origin }), 'ORIGIN_FORBIDDEN', origin);
    }
    const refusal = guard.check({ host: '127.0.0.1:7070', origin: 'http://evil.example.com' }, PORT);
    assert.ok(refusal instanceof AirlockError);
    assert.equal(refusal.status, 403);
    assert.match(refusal.message, /--allowed-origin http:\/\/evil\.example\.com \(or AIRLOCK_ALLOWED_ORIGINS/);
  });

  it('refuses a Host that is not one of its names (DNS rebinding) with HOST_FORBIDDEN', () => {
    for (const host of ['localhost:7070', '[::1]:7070', '127.0.0.1:7070', 'LOCALHOST:7070']) assert.equal(code(guard, { host }), 'ok', host);
    for (const host of ['evil.example.com:7070', 'evil.example.com', 'localhost', '127.0.0.1:7071', '10.0.0.5:7070', 'localhost:99999', 'a b', '[not-v6]:7070']) {
      assert.equal(code(guard, { host }), 'HOST_FORBIDDEN', host);
    }
    assert.match(guard.check({ host: 'evil.example.com:7070' }, PORT)?.message ?? '', /--allowed-host NAME/);
  });

  it('checks Host before Origin, and takes the first of repeated headers', () => {
    assert.equal(code(guard, { host: 'evil.example.com:7070', origin: 'http://evil.example.com:7070' }), 'HOST_FORBIDDEN');
    assert.equal(guard.check({ host: ['127.0.0.1:7070', 'evil'], origin: ['http://evil.example.com'] }, PORT)?.code, 'ORIGIN_FORBIDDEN');
  });
});

describe('OriginGuard with allowed origins and hosts', () => {
  const guard = new OriginGuard({
    listenHost: '127.0.0.1',
    allowedOrigins: ['https://console.example.com/', 'http://dev.local:3000'],
    allowedHosts: ['airlock.internal', 'proxy.example.com:8443'],
  });

  it('passes the listed origins exactly (scheme, host and port)', () => {
    assert.equal(code(guard, { host: '127.0.0.1:7070', origin: 'https://console.example.com' }), 'ok');
    assert.equal(code(guard, { host: '127.0.0.1:7070', origin: 'http://dev.local:3000' }), 'ok');
    assert.equal(code(guard, { host: '127.0.0.1:7070', origin: 'http://console.example.com' }), 'ORIGIN_FORBIDDEN');
    assert.equal(code(guard, { host: '127.0.0.1:7070', origin: 'http://dev.local:3001' }), 'ORIGIN_FORBIDDEN');
  });

  it('accepts a listed name on any port, a listed NAME:PORT only on that port, and pages served under those names', () => {
    assert.equal(code(guard, { host: 'airlock.internal' }), 'ok');
    assert.equal(code(guard, { host: 'airlock.internal:443' }), 'ok');
    assert.equal(code(guard, { host: 'proxy.example.com:8443' }), 'ok');
    assert.equal(code(guard, { host: 'proxy.example.com' }), 'HOST_FORBIDDEN');
    // The console behind a TLS proxy: the page's origin is the proxy's name.
    assert.equal(code(guard, { host: 'airlock.internal', origin: 'https://airlock.internal' }), 'ok');
  });
});

describe('OriginGuard on other listeners', () => {
  it('a server bound to one address answers to that address only, plus listed names', () => {
    const guard = new OriginGuard({ listenHost: '10.0.0.5', allowedHosts: ['airlock.lan'] });
    assert.equal(code(guard, { host: '10.0.0.5:7070', origin: 'http://10.0.0.5:7070' }), 'ok');
    assert.equal(code(guard, { host: 'airlock.lan:7070' }), 'ok');
    assert.equal(code(guard, { host: '127.0.0.1:7070' }), 'HOST_FORBIDDEN');
    assert.equal(code(guard, { host: 'localhost:7070' }), 'HOST_FORBIDDEN');
  });

  it('a server bound to every interface answers to the machine\'s addresses, its host name and the loopback names', () => {
    const guard = new OriginGuard({ listenHost: '0.0.0.0', machineAddresses: () => ['192.168.1.20', 'fe80::1', '127.0.0.1'] });
    for (const host of ['192.168.1.20:7070', '[fe80::1]:7070', 'localhost:7070', '[::1]:7070', `${hostname().toLowerCase()}:7070`]) assert.equal(code(guard, { host }), 'ok', host);
    assert.equal(code(guard, { host: '0.0.0.0:7070' }), 'HOST_FORBIDDEN');
    assert.equal(code(guard, { host: '192.168.1.21:7070' }), 'HOST_FORBIDDEN');
    assert.deepEqual(
      guard.hostNames(PORT).filter((name) => name.name === '127.0.0.1'),
      [{ name: '127.0.0.1', port: PORT }],
      'each name once',
    );
  });

  it('an IPv6 listener gives its address in brackets', () => {
    const guard = new OriginGuard({ listenHost: '[::1]' });
    assert.equal(code(guard, { host: '[::1]:7070', origin: 'http://[::1]:7070' }), 'ok');
    assert.equal(code(guard, { host: 'localhost:7070' }), 'ok');
  });
});

describe('the options of serve', () => {
  it('normalizes origins as browsers send them and refuses anything else with INVALID_ARGUMENTS', () => {
    assert.equal(normalizeAllowedOrigin('HTTPS://Console.Example.com:443/'), 'https://console.example.com');
    assert.equal(normalizeAllowedOrigin(' http://dev.local:3000 '), 'http://dev.local:3000');
    for (const bad of ['console.example.com', 'https://console.example.com/app', 'ftp://x', 'https://x?y=1', 'https://user@x', '*']) {
      assert.throws(() => normalizeAllowedOrigin(bad), (error: unknown) => error instanceof AirlockError && error.code === 'INVALID_ARGUMENTS' && /--allowed-origin/.test(error.message), bad);
    }
  });

  it('parses host names with an optional port and refuses the rest', () => {
    assert.deepEqual(parseAllowedHost('Airlock.Internal'), { name: 'airlock.internal', port: undefined });
    assert.deepEqual(parseAllowedHost('10.0.0.5:7070'), { name: '10.0.0.5', port: 7070 });
    assert.deepEqual(parseAllowedHost('[::1]:7070'), { name: '[::1]', port: 7070 });
    for (const bad of ['', 'http://x', 'a:b', 'x:70000', '::1']) {
      assert.throws(() => parseAllowedHost(bad), (error: unknown) => error instanceof AirlockError && error.code === 'INVALID_ARGUMENTS', bad);
    }
  });

  it('reads comma-separated lists from the environment', () => {
    assert.deepEqual(listFromEnvironment(' https://a.example , ,http://b.example:8080,'), ['https://a.example', 'http://b.example:8080']);
    assert.deepEqual(listFromEnvironment(undefined), []);
  });
});
