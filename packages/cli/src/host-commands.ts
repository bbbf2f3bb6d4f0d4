/**
 * Commands that run on the host itself rather than through the API:
 * `serve`, `images ...` (building a root filesystem needs the host) and
 * `contract check` (offline validation).
 */
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_LISTEN, defaultDataDir } from './connection-options.js';

// The runtime (SQLite, Cedar, Fastify) loads only for the commands that need it.
const runtime = () => import('@airlock/runtime');
import { EXIT_USAGE, printJson, printTable } from './output.js';

async function parseListen(listen: string): Promise<{ host: string; port: number }> {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(listen);
  const port = Number(match?.[3]);
  if (!match || port > 65535) throw new (await runtime()).AirlockError('INVALID_ARGUMENTS', `--listen takes HOST:PORT (e.g. 127.0.0.1:7070), got ${JSON.stringify(listen)}`);
  return { host: match[1] ?? match[2] ?? '127.0.0.1', port };
}

/** Commander's accumulator for a repeatable option. */
function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Registers `serve`, `images` and `contract`. */
export function registerHostCommands(program: Command): void {
  program
    .command('serve')
    .description('run the control plane: HTTP API, sessions, policy and audit')
    .option('--data-dir <dir>', 'where Airlock keeps its state', defaultDataDir())
    .option('--listen <host:port>', 'address to listen on', DEFAULT_LISTEN)
    .option('--log', 'log every request')
    .option('--allowed-origin <url>', 'let web pages of this origin call the server (repeatable; also AIRLOCK_ALLOWED_ORIGINS, comma-separated)', collect, [])
    .option('--allowed-host <name>', 'accept this name (NAME or NAME:PORT) in the Host header, e.g. behind a reverse proxy (repeatable; also AIRLOCK_ALLOWED_HOSTS)', collect, [])
    .option('--objects <s3-url>', 'keep snapshots and suspended disks in object storage, s3://BUCKET[/prefix] (endpoint, region, credentials: AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)', process.env['AIRLOCK_OBJECTS_URL'])
    .action(async (options: { dataDir: string; listen: string; log?: boolean; allowedOrigin: string[]; allowedHost: string[]; objects?: string }) => {
      const { host, port } = await parseListen(options.listen);
      const server = await (await runtime()).startServer({
        dataDir: options.dataDir,
        host,
        port,
        logger: Boolean(options.log),
        allowedOrigins: options.allowedOrigin,
        allowedHosts: options.allowedHost,
        ...(options.objects ? { objects: options.objects } : {}),
      });
      const r = server.reconciled;
      process.stderr.write(`airlock: listening on ${server.url} (data dir ${server.layout.root})\n`);
      if (server.objects) process.stderr.write(`airlock: snapshots in object storage ${server.objects.description}\n`);
      if (server.tokenCreated) process.stderr.write(`airlock: created API token in ${server.layout.tokenFile}\n`);
      process.stderr.write(`airlock: export AIRLOCK_URL=${server.url} AIRLOCK_TOKEN=${server.token}\n`);
      if (r.adopted.length + r.rolledBack.length + r.completed.length + r.failed.length + r.orphansRemoved.length > 0) {
        process.stderr.write(`airlock: reconciled after restart: ${r.adopted.length} adopted, ${r.completed.length} completed, ${r.rolledBack.length} rolled back, ${r.failed.length} failed, ${r.orphansRemoved.length} orphans removed\n`);
      }
      for (const problem of r.problems) {
        process.stderr.write(`airlock: could not reconcile ${problem.item} (left as it was; also in the system audit log): ${problem.code}: ${problem.message}\n`);
      }
      const stop = async () => {
        process.stderr.write('airlock: shutting down (sessions keep running and are adopted at the next start)\n');
        await server.close();
        process.exit(0);
      };
      process.once('SIGINT', () => void stop());
      process.once('SIGTERM', () => void stop());
    });

  const images = program.command('images').description('images sessions start from (run on the host)');
  const catalog = async (dataDir: string) => {
    const { openImageCatalog, openDataDir } = await runtime();
    return openImageCatalog(openDataDir(dataDir));
  };
  const progress = (p: { phase: string; message: string; fraction?: number }) =>
    process.stderr.write(`[${p.fraction === undefined ? '   ' : `${String(Math.round(p.fraction * 100)).padStart(3)}%`}] ${p.phase}: ${p.message}\n`);

  images
    .command('ls')
    .option('--data-dir <dir>', 'data dir', defaultDataDir())
    .option('--json', 'print JSON')
    .action(async (options: { dataDir: string; json?: boolean }) => {
      const list = await (await catalog(options.dataDir)).list();
      if (options.json) return printJson(list);
      printTable(['NAME', 'SOURCE', 'SIZE', 'DIGEST', 'CREATED'], list.map((i) => [i.name, i.source, `${(i.sizeBytes / 1048576).toFixed(0)} MiB`, i.digest.slice(0, 19), i.createdAt]));
    });

  images
    .command('build [name]')
    .description('build the Debian bookworm image with debootstrap (cached after the first build)')
    .option('--data-dir <dir>', 'data dir', defaultDataDir())
    .option('--force', 'rebuild even if it exists')
    .option('--desktop', 'build debian-bookworm-desktop: a display (Xvfb, openbox), x11vnc, Chromium and xdotool')
    .action(async (name: string | undefined, options: { dataDir: string; force?: boolean; desktop?: boolean }) => {
      const image = await (await catalog(options.dataDir)).buildDebian({
        ...(name ? { name } : {}),
        onProgress: progress,
        force: Boolean(options.force),
        desktop: Boolean(options.desktop),
      });
      process.stdout.write(`${image.name} ${image.digest}\n`);
    });

  images
    .command('import <name> <archive>')
    .description('import an OCI image archive (docker save / skopeo oci-archive)')
    .option('--data-dir <dir>', 'data dir', defaultDataDir())
    .action(async (name: string, archive: string, options: { dataDir: string }) => {
      const image = await (await catalog(options.dataDir)).importOciArchive({ name, archivePath: archive, onProgress: progress });
      process.stdout.write(`${image.name} ${image.digest}\n`);
    });

  images
    .command('rm <name>')
    .option('--data-dir <dir>', 'data dir', defaultDataDir())
    .action(async (name: string, options: { dataDir: string }) => {
      await (await catalog(options.dataDir)).remove(name, await liveSessionsUse(options.dataDir));
      process.stdout.write(`removed ${name}\n`);
    });

  const contract = program.command('contract').description('session contracts');
  contract
    .command('check <file>')
    .description('validate a contract offline; lists every error with its path')
    .option('--json', 'print the parsed contract as JSON')
    .action(async (file: string, options: { json?: boolean }) => {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (error) {
        process.stderr.write(`airlock: cannot read ${file}: ${(error as Error).message}\n`);
        process.exitCode = EXIT_USAGE;
        return;
      }
      const parsed = (await runtime()).parseContractText(text, 'auto', { baseDir: dirname(file) });
      if (options.json) printJson(parsed);
      else process.stdout.write(`ok: ${file} is a valid contract (${parsed.policies.length} policies, enforcement ${parsed.enforcement})\n`);
    });
}

/** A test of whether a live session of the data dir uses an image (read from the store on the host). */
async function liveSessionsUse(dataDir: string): Promise<(imageName: string) => boolean> {
  const { SqliteStore, openDataDir } = await runtime();
  const store = new SqliteStore(openDataDir(dataDir).database);
  try {
    const live = new Set(store.listSessions().filter((session) => session.state !== 'terminated').map((session) => session.imageName));
    return (imageName) => live.has(imageName);
  } finally {
    store.close();
  }
}
