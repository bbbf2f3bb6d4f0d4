/**
 * Origin and Host validation for every route (API, MCP, console). A browser
 * page of another site can make a browser send requests to a local server,
 * and DNS rebinding can make such a page look same-site; both show in the
 * headers: a foreign `Origin`, or a `Host` that is not one of the server's
 * names. Clients that are not browsers (CLI, SDK, MCP clients in Node) send
 * no `Origin` and pass; the MCP specification requires the 403.
 */
import { hostname as machineHostname, networkInterfaces } from 'node:os';
import { isIP } from 'node:net';
import { AirlockError } from '../core/errors.js';

/** A name the server answers to in the `Host` header; no port means any port. */
export interface HostName {
  /** lower case; IPv6 addresses in brackets */
  name: string;
  port: number | undefined;
}

/** Options of the guard. */
export interface OriginGuardOptions {
  /** the address the server listens on, as given to listen (`127.0.0.1`, `0.0.0.0`, `::`, a name) */
  listenHost: string;
  /** origins allowed besides the server's own (`--allowed-origin URL`), e.g. `https://console.example.com` */
  allowedOrigins?: readonly string[];
  /** further names of the server (`--allowed-host NAME` or `NAME:PORT`), e.g. the name a reverse proxy forwards */
  allowedHosts?: readonly string[];
  /** the machine's own addresses, for a server bound to every interface (default: from `os.networkInterfaces`) */
  machineAddresses?: () => readonly string[];
}

/** A header value as Node hands it over. */
type HeaderValue = string | string[] | undefined;

/** Decides whether a request's `Host` and `Origin` belong to this server. */
export class OriginGuard {
  private readonly allowedOrigins: ReadonlySet<string>;
  private readonly extraHosts: readonly HostName[];
  private readonly machineAddresses: () => readonly string[];
  private readonly listenHost: string;

  constructor(options: OriginGuardOptions) {
    this.listenHost = options.listenHost.replace(/^\[(.*)\]$/, '$1').toLowerCase();
    this.allowedOrigins = new Set((options.allowedOrigins ?? []).map(normalizeAllowedOrigin));
    this.extraHosts = (options.allowedHosts ?? []).map(parseAllowedHost);
    this.machineAddresses = options.machineAddresses ?? interfaceAddresses;
  }

  /** The names this server answers to when it listens on `port`. */
  hostNames(port: number): HostName[] {
    const own = (name: string): HostName => ({ name: bracketed(name), port });
    const names: HostName[] = [own(this.listenHost)];
    if (isLoopback(this.listenHost) || isWildcard(this.listenHost)) names.push(own('127.0.0.1'), own('localhost'), own('::1'));
    if (isWildcard(this.listenHost)) {
      names.push(own(machineHostname().toLowerCase()));
      for (const address of this.machineAddresses()) names.push(own(address.toLowerCase()));
    }
    names.push(...this.extraHosts);
    const seen = new Set<string>();
    return names.filter((entry) => !isWildcard(entry.name.replace(/^\[(.*)\]$/, '$1')) && !seen.has(describeHost(entry)) && seen.add(describeHost(entry)));
  }

  /**
   * The refusal for a request with these headers to a server listening on
   * `port`, or undefined when it may pass. A request without `Origin` (not a
   * browser) or without `Host` (not HTTP/1.1, so not a browser) passes that check.
   */
  check(headers: { host?: HeaderValue; origin?: HeaderValue }, port: number): AirlockError | undefined {
    const names = this.hostNames(port);
    const host = single(headers.host);
    if (host !== undefined) {
      const parsed = parseHostHeader(host);
      if (!parsed || !names.some((entry) => matches(entry, parsed.name, parsed.port))) {
        return new AirlockError(
          'HOST_FORBIDDEN',
          `the Host header ${JSON.stringify(host)} is not a name of this server (it answers to ${names.map(describeHost).join(', ')}); ` +
            'requests through other names are refused so that a web page cannot reach the server by DNS rebinding. ' +
            'Start the server with --allowed-host NAME (or AIRLOCK_ALLOWED_HOSTS=NAME,...) to add a name, e.g. the one a reverse proxy forwards',
          { details: { host } },
        );
      }
    }
    const origin = single(headers.origin);
    if (origin === undefined || this.isAllowedOrigin(origin, names)) return undefined;
    return new AirlockError(
      'ORIGIN_FORBIDDEN',
      `requests from web pages of ${JSON.stringify(origin)} are refused: that is not this server's origin. ` +
        `Start the server with --allowed-origin ${/^https?:\/\//.test(origin) ? origin : 'URL'} (or AIRLOCK_ALLOWED_ORIGINS=URL,...) to allow a page of that origin to call it`,
      { details: { origin } },
    );
  }

  private isAllowedOrigin(origin: string, names: readonly HostName[]): boolean {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false; // `null` (sandboxed frames, file: pages) and garbage
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
    if (this.allowedOrigins.has(url.origin)) return true;
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    return names.some((entry) => matches(entry, url.hostname.toLowerCase(), port));
  }
}

/** Checks an `--allowed-origin` value and returns it as the browser would send it; throws INVALID_ARGUMENTS. */
export function normalizeAllowedOrigin(text: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text.trim());
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || (url.pathname !== '/' && url.pathname !== '') || url.search || url.hash || url.username) {
    throw new AirlockError('INVALID_ARGUMENTS', `--allowed-origin takes an origin, scheme://host[:port] without a path (e.g. https://console.example.com), got ${JSON.stringify(text)}`, {
      details: { field: 'allowedOrigins' },
    });
  }
  return url.origin;
}

/** Checks an `--allowed-host` value (`NAME` or `NAME:PORT`); throws INVALID_ARGUMENTS. */
export function parseAllowedHost(text: string): HostName {
  const parsed = parseHostHeader(text.trim(), 'any');
  if (!parsed || parsed.name === '') {
    throw new AirlockError('INVALID_ARGUMENTS', `--allowed-host takes a host name or address, optionally with :PORT (e.g. airlock.internal or 10.0.0.5:7070), got ${JSON.stringify(text)}`, {
      details: { field: 'allowedHosts' },
    });
  }
  return parsed;
}

/** The entries of a comma-separated environment variable (AIRLOCK_ALLOWED_ORIGINS, AIRLOCK_ALLOWED_HOSTS). */
export function listFromEnvironment(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/** `host`, `host:port`, `[v6]` or `[v6]:port`; a missing port is 80 (the server speaks plain HTTP), or any port for a configured name. */
function parseHostHeader(value: string, missingPort: 80 | 'any' = 80): HostName | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s/@]+)(?::(\d{1,5}))?$/.exec(value);
  if (!match) return undefined;
  const port = match[2] !== undefined ? Number(match[2]) : missingPort === 'any' ? undefined : missingPort;
  if (port !== undefined && port > 65535) return undefined;
  const name = (match[1] as string).toLowerCase();
  if (name.startsWith('[') && isIP(name.slice(1, -1)) !== 6) return undefined;
  return { name: bracketed(name), port };
}

function matches(entry: HostName, name: string, port: number | undefined): boolean {
  return entry.name === name && (entry.port === undefined || entry.port === port);
}

function describeHost(entry: HostName): string {
  return entry.port === undefined ? entry.name : `${entry.name}:${entry.port}`;
}

function bracketed(name: string): string {
  return isIP(name) === 6 ? `[${name}]` : name;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '';
}

function single(value: HeaderValue): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((addresses) => addresses ?? [])
    .map((address) => address.address);
}
