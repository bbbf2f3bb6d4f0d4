/**
 * The web console's built files (packages/console/dist/web), served at `/`
 * from memory: hashed assets cached for a year, index.html revalidated on
 * every load and answered for any client route. Loaded once at start; the
 * whole console is a few hundred kilobytes.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, extname, join, relative, sep } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** One file ready to send. */
export interface ConsoleAsset {
  body: Buffer;
  contentType: string;
  etag: string;
  /** named by its content hash: a browser may keep it forever */
  immutable: boolean;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

/** esbuild's `[name]-[hash]` names: the hash is 8 characters of A-Z and 0-9. */
const HASHED_NAME = /-[A-Z0-9]{8}\.[a-z0-9]+$/;

/**
 * The console, served only from its own origin: no inline script, no framing, no outside hosts.
 * Inline styles are allowed because xterm.js (the takeover terminal) writes its theme and cell
 * sizes into <style> elements; scripts stay same-origin only.
 */
export const CONSOLE_SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
};

/** Where `npm run build` puts the console, found through the @airlock/console package. */
export function defaultConsoleAssetsDir(): string | undefined {
  try {
    const manifest = createRequire(import.meta.url).resolve('@airlock/console/package.json');
    return join(dirname(manifest), 'dist', 'web');
  } catch {
    return undefined;
  }
}

/** The console's files by URL path. */
export class ConsoleAssets {
  private constructor(
    private readonly files: Map<string, ConsoleAsset>,
    /** why there is no console, when it was not built */
    readonly missingReason: string | null,
  ) {}

  /** Loads every file of a built console directory; a missing build gives a console that says how to build it. */
  static load(directory: string | undefined): ConsoleAssets {
    if (directory === undefined || !existsSync(join(directory, 'index.html'))) {
      return new ConsoleAssets(new Map(), `the web console is not built (no index.html in ${directory ?? 'packages/console/dist/web'}); run \`npm run build\` at the repository root`);
    }
    const files = new Map<string, ConsoleAsset>();
    for (const path of walk(directory)) {
      const urlPath = `/${relative(directory, path).split(sep).join('/')}`;
      const body = readFileSync(path);
      files.set(urlPath, {
        body,
        contentType: CONTENT_TYPES[extname(path)] ?? 'application/octet-stream',
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
        immutable: urlPath.startsWith('/assets/') && HASHED_NAME.test(urlPath),
      });
    }
    return new ConsoleAssets(files, null);
  }

  /**
   * The file for a GET of `urlPath`: the file itself, else index.html for a
   * client route (a path without an extension), else undefined (a 404).
   */
  resolve(urlPath: string): ConsoleAsset | undefined {
    const path = urlPath.split('?')[0] ?? '/';
    const direct = this.files.get(path);
    if (direct && path !== '/index.html') return direct;
    if (extname(path) === '' || path === '/index.html') return this.files.get('/index.html');
    return undefined;
  }
}

/**
 * Answers a GET of a console path: the file, index.html for a client route, or
 * a plain 503 saying how to build a missing console. False when nothing matches
 * (the caller answers 404).
 */
export function sendConsoleAsset(assets: ConsoleAssets, request: FastifyRequest, reply: FastifyReply): boolean {
  if (assets.missingReason !== null) {
    void reply.status(503).header('content-type', 'text/plain; charset=utf-8').send(`${assets.missingReason}\n`);
    return true;
  }
  const asset = assets.resolve(request.url);
  if (!asset) return false;
  void reply.headers(CONSOLE_SECURITY_HEADERS).header('etag', asset.etag);
  if (request.headers['if-none-match'] === asset.etag) {
    void reply.status(304).send();
    return true;
  }
  void reply
    .header('content-type', asset.contentType)
    .header('cache-control', asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
    .send(asset.body);
  return true;
}

function walk(directory: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(directory)) {
    const path = join(directory, entry);
    if (statSync(path).isDirectory()) found.push(...walk(path));
    else found.push(path);
  }
  return found;
}
