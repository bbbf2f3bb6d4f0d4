/**
 * Commands that run on the host itself rather than through the API:
 * `serve`, `images ...` (building a root filesystem needs the host),
 * `store copy` (moving a stopped server's state) and `contract check`
 * (offline validation).
 */
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_LISTEN, defaultDataDir } from './connection-options.js';

// The runtime (SQLite, Cedar, Fastify) loads only for the commands that need it.
const runtime = () => import('@airlock/runtime');
import { EXIT_FAILURE, EXIT_USAGE, printJson, printTable } from './output.js';

async function parseListen(listen: string): Promise<{ host: string; port: number }> {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(listen);
  const port = Number(match?.[3]);
  if (!match || port > 65535)
    throw new (await runtime()).AirlockError('INVALID_ARGUMENTS', `--listen takes HOST:PORT (e.g. 127.0.0.1:7070), got ${JSON.stringify(listen)}`);
  return { host: match[1] ?? match[2] ?? '127.0.0.1', port };
}

/** `--metrics-listen`: HOST:PORT, or a bare PORT on loopback. */
async function parseMetricsListen(listen: string): Promise<{ host: string; port: number }> {
  const port = Number(listen);
  if (/^\d{1,5}$/.test(listen) && port <= 65535) return { host: '127.0.0.1', port };
  try {
    return await parseListen(listen);
  } catch {
    throw new (await runtime()).AirlockError(
      'INVALID_ARGUMENTS',
      `--metrics-listen takes HOST:PORT or a PORT on loopback (e.g. 127.0.0.1:9464 or 9464), got ${JSON.stringify(listen)}`,
    );
  }
}

async function parseLogLevel(text: string): Promise<import('@airlock/runtime').LogLevel> {
  const { isLogLevel, LOG_LEVELS, AirlockError } = await runtime();
  if (!isLogLevel(text)) throw new AirlockError('INVALID_ARGUMENTS', `--log-level takes one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(text)}`);
  return text;
}

/** Machines kept warm per class of session when `--warm-pool` is not given. */
const DEFAULT_WARM_POOL = 2;
/** More would only hold memory: a pool refills one machine at a time. */
const MAX_WARM_POOL = 64;

async function parseWarmPool(text: string): Promise<number> {
  const size = Number(text);
  if (!/^\d+$/.test(text) || size > MAX_WARM_POOL) {
    throw new (await runtime()).AirlockError(
      'INVALID_ARGUMENTS',
      `--warm-pool takes a whole number from 0 (off) to ${MAX_WARM_POOL}, got ${JSON.stringify(text)}`,
    );
  }
  return size;
}

/** Commander's accumulator for a repeatable option. */
function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Registers `serve`, `images`, `store` and `contract`. */
export function registerHostCommands(program: Command): void {
  program
    .command('serve')
    .description('run the control plane: HTTP API, sessions, policy and audit')
    .option('--data-dir <dir>', 'where Airlock keeps its state', defaultDataDir())
    .option('--listen <host:port>', 'address to listen on', DEFAULT_LISTEN)
    .option('--store <url>', 'keep state in PostgreSQL (postgres://USER@HOST:PORT/DB); default $AIRLOCK_STORE_URL, else SQLite in the data dir')
    .option('--log', 'kept for old scripts: every request is logged at the default level, info')
    .option(
      '--log-level <level>',
      'JSON lines on stdout: debug | info (requests, lifecycle, errors) | warn | error | off; default $AIRLOCK_LOG_LEVEL, else info',
    )
    .option('--allowed-origin <url>', 'let web pages of this origin call the server (repeatable; also AIRLOCK_ALLOWED_ORIGINS, comma-separated)', collect, [])
    .option(
      '--allowed-host <name>',
      'accept this name (NAME or NAME:PORT) in the Host header, e.g. behind a reverse proxy (repeatable; also AIRLOCK_ALLOWED_HOSTS)',
      collect,
      [],
    )
    .option(
      '--objects <s3-url>',
      'keep snapshots and suspended disks in object storage, s3://BUCKET[/prefix] (endpoint, region, credentials: AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)',
      process.env['AIRLOCK_OBJECTS_URL'],
    )
    .option('--node-id <name>', "this node's name in a cluster (default: the one the data dir got at its first start)")
    .option('--advertise <url>', 'join a cluster: the address other nodes reach this one at, http://HOST:PORT (needs --store postgres://… and --objects)')
    .option('--warm-pool <n>', 'machines kept started per class of session, so that a create only claims one (0 disables)', String(DEFAULT_WARM_POOL))
    .option('--metrics-listen <address>', 'also serve GET /metrics without a token on HOST:PORT (a bare PORT listens on 127.0.0.1), for Prometheus')
    .option('--metrics-tenants', 'label metrics with tenant names (off: no tenant appears in /metrics)')
    .action(
      async (options: {
        dataDir: string;
        listen: string;
        store?: string;
        log?: boolean;
        allowedOrigin: string[];
        allowedHost: string[];
        objects?: string;
        nodeId?: string;
        advertise?: string;
        warmPool: string;
        metricsListen?: string;
        metricsTenants?: boolean;
        logLevel?: string;
      }) => {
        const logLevel = await parseLogLevel(options.logLevel ?? process.env['AIRLOCK_LOG_LEVEL'] ?? 'info');
        const { host, port } = await parseListen(options.listen);
        const metricsListen = options.metricsListen === undefined ? undefined : await parseMetricsListen(options.metricsListen);
        const warmPool = await parseWarmPool(options.warmPool);
        const { startServer, redactUrl } = await runtime();
        const storeUrl = options.store ?? process.env['AIRLOCK_STORE_URL'];
        // A promise nobody awaited that rejects is a bug, never an outage (those are caught where they happen).
        // The server logs it and keeps running: exiting would leave every machine it runs without a manager.
        let reportUnhandled: (what: string, error: unknown) => void = (what, error) => {
          process.stderr.write(`airlock: ${what}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
        };
        process.on('unhandledRejection', (reason) => reportUnhandled('unhandled rejection (a bug: please report it; the server keeps running)', reason));
        const server = await startServer({
          dataDir: options.dataDir,
          host,
          port,
          logLevel,
          allowedOrigins: options.allowedOrigin,
          allowedHosts: options.allowedHost,
          ...(storeUrl ? { storeUrl } : {}),
          ...(options.objects ? { objects: options.objects } : {}),
          ...(options.nodeId === undefined ? {} : { nodeId: options.nodeId }),
          ...(options.advertise === undefined ? {} : { advertise: options.advertise }),
          warmPool,
          ...(metricsListen ? { metricsListen } : {}),
          metricsTenants: Boolean(options.metricsTenants),
        });
        reportUnhandled = (what, error) => server.report(what, error);
        const r = server.reconciled;
        process.stderr.write(
          `airlock: listening on ${server.url} (data dir ${server.layout.root}, store ${storeUrl ? redactUrl(storeUrl) : 'SQLite in the data dir'}, node ${server.nodeId})\n`,
        );
        if (server.objects) process.stderr.write(`airlock: snapshots in object storage ${server.objects.description}\n`);
        if (server.membership)
          process.stderr.write(
            `airlock: joined the cluster as node ${server.nodeId} at ${options.advertise ?? ''} (lease ${server.membership.leaseMs / 1000} s)\n`,
          );
        process.stderr.write(
          warmPool > 0
            ? `airlock: warm pool: ${warmPool} machines per class of session, filling in the background\n`
            : 'airlock: warm pool off: every session starts cold\n',
        );
        if (server.metricsUrl) process.stderr.write(`airlock: metrics without a token at ${server.metricsUrl}\n`);
        if (server.tokenCreated) process.stderr.write(`airlock: created API token in ${server.layout.tokenFile}\n`);
        process.stderr.write(`airlock: export AIRLOCK_URL=${server.url} AIRLOCK_TOKEN=${server.token}\n`);
        if (r.adopted.length + r.rolledBack.length + r.completed.length + r.failed.length + r.orphansRemoved.length > 0) {
          process.stderr.write(
            `airlock: reconciled after restart: ${r.adopted.length} adopted, ${r.completed.length} completed, ${r.rolledBack.length} rolled back, ${r.failed.length} failed, ${r.orphansRemoved.length} orphans removed\n`,
          );
        }
        for (const problem of r.problems) {
          process.stderr.write(
            `airlock: could not reconcile ${problem.item} (left as it was; also in the system audit log): ${problem.code}: ${problem.message}\n`,
          );
        }
        const stop = async () => {
          process.stderr.write(
            `airlock: shutting down (sessions keep running and are adopted at the next start${server.membership ? '; leaving the cluster' : ''})\n`,
          );
          // Open sockets cannot hold the stop (the HTTP server destroys them 2 s into closing); the teardowns of
          // warm machines and suspended sandboxes can take longer on a busy host and are let finish. Only a stop
          // stuck on something else ends here, and the next start reconciles what it left.
          setTimeout(() => {
            process.stderr.write('airlock: shutdown took longer than 60 s, exiting now (the next start reconciles what was left)\n');
            process.exit(1);
          }, 60_000).unref();
          await server.close().then(
            () => process.exit(0),
            (error: unknown) => {
              process.stderr.write(
                `airlock: shutdown failed (the next start reconciles what was left): ${error instanceof Error ? error.message : String(error)}\n`,
              );
              process.exit(1);
            },
          );
        };
        process.once('SIGINT', () => void stop());
        process.once('SIGTERM', () => void stop());
      },
    );

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
      printTable(
        ['NAME', 'SOURCE', 'SIZE', 'DIGEST', 'CREATED'],
        list.map((i) => [i.name, i.source, `${(i.sizeBytes / 1048576).toFixed(0)} MiB`, i.digest.slice(0, 19), i.createdAt]),
      );
    });

  images
    .command('build [name]')
    .description('build the Debian bookworm image with debootstrap (cached after the first build)')
    .option('--data-dir <dir>', 'data dir', defaultDataDir())
    .option('--force', 'rebuild even if it exists')
    .option('--desktop', 'build debian-bookworm-desktop: a display (Xvfb, openbox), x11vnc, Chromium and xdotool')
    .action(async (name: string | undefined, options: { dataDir: string; force?: boolean; desktop?: boolean }) => {
      const image = await (
        await catalog(options.dataDir)
      ).buildDebian({
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

  const store = program.command('store').description('where a server keeps its state (run on the host)');
  store
    .command('copy')
    .description(
      'copy every session, approval, snapshot record and audit chain of a stopped server into an empty PostgreSQL database, then verify every chain there',
    )
    .option('--data-dir <dir>', 'the data dir of the server to copy from', defaultDataDir())
    .requiredOption('--to <url>', 'the PostgreSQL database (postgres://USER@HOST:PORT/DB)')
    .option('--json', 'print the report as JSON')
    .action(async (options: { dataDir: string; to: string; json?: boolean }) => {
      const {
        copyStore,
        openAuditLog,
        openDataDir,
        loadOrCreateNodeId,
        runningServerPid,
        recordPostgresStore,
        SqliteStore,
        PostgresStore,
        isPostgresUrl,
        redactUrl,
        AirlockError,
      } = await runtime();
      if (!isPostgresUrl(options.to))
        throw new AirlockError(
          'INVALID_ARGUMENTS',
          `--to takes a PostgreSQL URL such as postgres://airlock@127.0.0.1:5432/airlock (got ${JSON.stringify(options.to)})`,
        );
      const layout = openDataDir(options.dataDir);
      const pid = runningServerPid(layout);
      if (pid !== undefined)
        throw new AirlockError(
          'INVALID_STATE',
          `a server (pid ${pid}) is running on ${layout.root}; stop it first, so that nothing changes while it is copied`,
        );
      const source = new SqliteStore(layout.database);
      try {
        const { audit, anchor } = await openAuditLog(layout, source);
        const target = await PostgresStore.open(options.to, { listen: false });
        try {
          const report = await copyStore(source, target, { audit, owner: loadOrCreateNodeId(layout) });
          const bad = report.verified.filter((chain) => !chain.result.ok);
          if (options.json) printJson(report);
          else {
            process.stdout.write(
              `copied ${report.sessions} sessions, ${report.approvals} approvals, ${report.snapshots} snapshot records and ${report.chains} audit chains (${report.records} records) to ${redactUrl(options.to)}\n`,
            );
            for (const chain of bad)
              process.stdout.write(
                `FAILED ${chain.sessionId || '(system)'}: record ${chain.result.problem?.seq}: ${chain.result.problem?.kind}: ${chain.result.problem?.message}\n`,
              );
            if (bad.length === 0)
              process.stdout.write(
                `verified: every chain intact; serve it with \`airlock serve --data-dir ${layout.root} --store ${redactUrl(options.to)}\`\n`,
              );
          }
          if (bad.length > 0) process.exitCode = EXIT_FAILURE;
          // From now on this data dir's sessions live there: a server without --store refuses to start on it.
          else recordPostgresStore(layout, options.to);
        } finally {
          await target.close();
          anchor.close();
        }
      } finally {
        await source.close();
      }
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
  const { openStore, openDataDir } = await runtime();
  const store = await openStore({ url: process.env['AIRLOCK_STORE_URL'], sqlitePath: openDataDir(dataDir).database, postgres: { listen: false } });
  try {
    const live = new Set((await store.listSessions()).filter((session) => session.state !== 'terminated').map((session) => session.imageName));
    return (imageName) => live.has(imageName);
  } finally {
    await store.close();
  }
}
