/** `airlock tokens ...` and `airlock tenants ...`: API tokens with a tenant and a role, and per-tenant quotas (admin only). */
import { InvalidArgumentError, type Command } from 'commander';
import { Connection, Tenants, Tokens, type TenantInfo, type TenantQuotas, type TokenRole } from '@airlock/sdk';
import { cliConnection } from './connection-options.js';
import { printJson, printTable } from './output.js';

const ROLES: readonly TokenRole[] = ['admin', 'operator', 'approver', 'agent', 'metrics'];

function role(value: string): TokenRole {
  if (!(ROLES as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${ROLES.join(', ')}`);
  return value as TokenRole;
}

/** Stands for `none` while commander holds the value (it does not keep a parsed null). */
const NO_LIMIT = -1;

/** A limit: a whole number from 0, or `none` (NO_LIMIT) to remove it. */
function limit(value: string): number {
  if (value === 'none') return NO_LIMIT;
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected a whole number from 0, or `none` for no limit');
  return Number(value);
}

function quota(value: number): number | null {
  return value === NO_LIMIT ? null : value;
}

function shown(value: number | null): string {
  return value === null ? '-' : String(value);
}

function describeTenant(tenant: TenantInfo): string {
  const q = tenant.quotas;
  const images = tenant.images === null ? 'every image' : `images ${tenant.images.join(', ') || '(none)'}`;
  return `${tenant.name}: sessions ${shown(q.maxSessions)}, concurrent calls ${shown(q.maxConcurrentCalls)}, fork branches ${shown(q.maxForkBranches)}, fork depth ${shown(q.maxForkDepth)}, ${images}`;
}

/** Registers `tokens` and `tenants`. */
export function registerTokenCommands(program: Command): void {
  const tokens = program
    .command('tokens')
    .description('API tokens: each belongs to one tenant and has one role (admin, operator, approver, agent, metrics); only an admin manages them');
  tokens
    .command('create')
    .description('make a token; its secret is printed once and stored only as a hash')
    .requiredOption('--tenant <name>', 'the tenant whose sessions it reaches')
    .option('--role <role>', 'admin | operator | approver | agent | metrics (default operator)', role)
    .option('--name <text>', 'a readable name, recorded as the approver of its decisions (default: its id)')
    .option('--e2b', 'make it an E2B API key (e2b_ + hex) for E2B code: the same token (role, tenant, revocation)')
    .option('--json', 'print JSON: {"id", "token", "tenant", "role"}')
    .action(async (options: { tenant: string; role?: TokenRole; name?: string; e2b?: boolean; json?: boolean }) => {
      const created = await new Tokens(new Connection(cliConnection())).create({
        tenant: options.tenant,
        ...(options.role === undefined ? {} : { role: options.role }),
        ...(options.name === undefined ? {} : { name: options.name }),
        ...(options.e2b === true ? { e2b: true } : {}),
      });
      if (options.json) return printJson({ id: created.id, token: created.token, tenant: created.tenant, role: created.role });
      process.stdout.write(`${created.id} (tenant ${created.tenant}, role ${created.role}): ${created.token}\nkeep the token now: it is not shown again\n`);
    });
  tokens
    .command('ls')
    .description('list tokens (never their secrets)')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }) => {
      const all = await new Tokens(new Connection(cliConnection())).list();
      if (options.json) return printJson(all);
      printTable(
        ['ID', 'TENANT', 'ROLE', 'NAME', 'CREATED', 'LAST USED', 'REVOKED'],
        all.map((token) => [token.id, token.tenant, token.role, token.name, token.createdAt, token.lastUsedAt ?? '-', token.revokedAt ?? '-']),
      );
    });
  tokens
    .command('revoke <id>')
    .description('revoke a token: it answers 401 from now on, and its console logins end')
    .option('--json', 'print JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      const revoked = await new Tokens(new Connection(cliConnection())).revoke(id);
      if (options.json) return printJson(revoked);
      process.stdout.write(`${revoked.id} revoked\n`);
    });

  const tenants = program.command('tenants').description("tenants' quotas and images (admin only); a tenant nobody configured has no limits and every image");
  tenants
    .command('set <name>')
    .description("set some of a tenant's quotas (`none` removes one); the others stay")
    .option('--max-sessions <n>', 'sessions not yet terminated, forks included', limit)
    .option('--max-concurrent-calls <n>', 'tool calls in flight at once (per server)', limit)
    .option('--max-fork-branches <n>', 'branches of one fork', limit)
    .option('--max-fork-depth <n>', 'generations of forks below a session made without one', limit)
    .option('--images <names>', 'the images its sessions may use, comma separated, or `all`')
    .option('--json', 'print JSON')
    .action(
      async (
        name: string,
        options: { maxSessions?: number; maxConcurrentCalls?: number; maxForkBranches?: number; maxForkDepth?: number; images?: string; json?: boolean },
      ) => {
        const quotas: Partial<TenantQuotas> & { images?: string[] | null } = {};
        if (options.images !== undefined)
          quotas.images =
            options.images === 'all'
              ? null
              : options.images
                  .split(',')
                  .map((image) => image.trim())
                  .filter(Boolean);
        if (options.maxSessions !== undefined) quotas.maxSessions = quota(options.maxSessions);
        if (options.maxConcurrentCalls !== undefined) quotas.maxConcurrentCalls = quota(options.maxConcurrentCalls);
        if (options.maxForkBranches !== undefined) quotas.maxForkBranches = quota(options.maxForkBranches);
        if (options.maxForkDepth !== undefined) quotas.maxForkDepth = quota(options.maxForkDepth);
        const tenant = await new Tenants(new Connection(cliConnection())).set(name, quotas);
        if (options.json) return printJson(tenant);
        process.stdout.write(`${describeTenant(tenant)}\n`);
      },
    );
  tenants
    .command('ls')
    .description('list tenants with settings')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }) => {
      const all = await new Tenants(new Connection(cliConnection())).list();
      if (options.json) return printJson(all);
      printTable(
        ['TENANT', 'SESSIONS', 'CONCURRENT CALLS', 'FORK BRANCHES', 'FORK DEPTH'],
        all.map((tenant) => [
          tenant.name,
          shown(tenant.quotas.maxSessions),
          shown(tenant.quotas.maxConcurrentCalls),
          shown(tenant.quotas.maxForkBranches),
          shown(tenant.quotas.maxForkDepth),
        ]),
      );
    });
}
