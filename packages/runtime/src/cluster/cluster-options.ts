/**
 * The flags that make a server a node of a cluster (`--node-id`,
 * `--advertise`), checked before anything starts: a cluster needs a shared
 * store (PostgreSQL) and shared snapshots (object storage), or a session
 * could not move between nodes.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { AirlockError } from '../core/errors.js';
import { DEFAULT_NODE_LEASE_MS } from './node-membership.js';

/** A node id: what `--node-id` accepts. */
export const NODE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** The cluster settings of a server, once checked. */
export interface ClusterSettings {
  /** where other nodes reach this one */
  address: string;
  leaseMs: number;
}

/**
 * The cluster settings, or undefined for a server on its own (no
 * `--advertise`). Refuses an address that is not http(s)://HOST:PORT, and a
 * cluster without a PostgreSQL store or object storage.
 */
export function checkClusterOptions(options: {
  advertise?: string;
  storeKind: 'sqlite' | 'postgres' | undefined;
  objects?: string;
  leaseSeconds?: string;
}): ClusterSettings | undefined {
  if (options.advertise === undefined) return undefined;
  let address: URL;
  try {
    address = new URL(options.advertise);
  } catch {
    throw new AirlockError(
      'INVALID_ARGUMENTS',
      `--advertise ${JSON.stringify(options.advertise)} is not a URL; give the address other nodes reach this one at, e.g. http://10.0.0.5:7070`,
    );
  }
  if ((address.protocol !== 'http:' && address.protocol !== 'https:') || address.pathname !== '/' || address.search || address.hash || address.username) {
    throw new AirlockError(
      'INVALID_ARGUMENTS',
      `--advertise ${JSON.stringify(options.advertise)} must be http://HOST:PORT (or https://), with no path, e.g. http://10.0.0.5:7070`,
    );
  }
  if (options.storeKind !== 'postgres') {
    throw new AirlockError(
      'INVALID_ARGUMENTS',
      '--advertise joins a cluster, whose nodes share one store: give --store postgres://USER@HOST:PORT/DB (or AIRLOCK_STORE_URL) too',
    );
  }
  if (!options.objects) {
    throw new AirlockError(
      'INVALID_ARGUMENTS',
      "--advertise joins a cluster, whose nodes resume each other's sessions from object storage: give --objects s3://BUCKET[/prefix] (or AIRLOCK_OBJECTS_URL) too",
    );
  }
  const leaseSeconds = options.leaseSeconds === undefined || options.leaseSeconds === '' ? undefined : Number(options.leaseSeconds);
  if (leaseSeconds !== undefined && !(leaseSeconds >= 1 && leaseSeconds <= 3600)) {
    throw new AirlockError('INVALID_ARGUMENTS', `AIRLOCK_NODE_LEASE_SECONDS=${JSON.stringify(options.leaseSeconds)}: give a number of seconds from 1 to 3600`);
  }
  return { address: address.origin, leaseMs: leaseSeconds === undefined ? DEFAULT_NODE_LEASE_MS : Math.round(leaseSeconds * 1000) };
}

/** Refuses a `--node-id` that is not a node id. */
export function checkNodeId(requested: string): void {
  if (!NODE_ID_PATTERN.test(requested)) {
    throw new AirlockError(
      'INVALID_ARGUMENTS',
      `--node-id ${JSON.stringify(requested)}: use letters, digits, '.', '_' and '-' (at most 128, starting with a letter or digit)`,
    );
  }
}

/**
 * Names the data dir's node `requested` (`--node-id`): a data dir is one
 * node for its whole life (its sessions, disks and uploads carry the id), so
 * a different name for a data dir that already has one is refused.
 */
export function claimNodeId(nodeIdFile: string, requested: string): void {
  checkNodeId(requested);
  const stored = existsSync(nodeIdFile) ? readFileSync(nodeIdFile, 'utf8').trim() : '';
  if (stored === requested) return;
  if (stored !== '') {
    throw new AirlockError(
      'INVALID_ARGUMENTS',
      `this data dir is node ${stored}; start it with --node-id ${stored} (or without --node-id), or give ${requested} a fresh data dir`,
      {
        details: { node: stored },
      },
    );
  }
  writeFileSync(`${nodeIdFile}.tmp`, `${requested}\n`);
  renameSync(`${nodeIdFile}.tmp`, nodeIdFile);
}
