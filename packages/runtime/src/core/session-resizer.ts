/**
 * Live resize of a session machine: new CPU and memory limits in place, with
 * no restart, so processes and memory are kept. The ceiling comes from the
 * contract (`resources.maxCpus` / `resources.maxMemoryMb`, by default 4× the
 * size the session started with). A request beyond the ceiling, or below
 * what the machine uses now, is refused with the reason and changes nothing.
 *
 * The resize runs as a call on the machine (`withMachine`: it wakes a
 * sleeping machine, and no suspend can start meanwhile) and one resize at a
 * time per session, so the limits on the host and in the record agree.
 */
import { AirlockError } from './errors.js';
import type { SandboxResources } from './sandbox-driver.js';
import type { SessionService } from './session-service.js';
import type { SessionRecord } from './session.js';
import type { ContractResources } from './session-contract.js';

/** What a resize asks for; an absent field keeps its current value. */
export interface ResizeRequest {
  cpus?: number;
  memoryMb?: number;
}

/** The largest limits a session may be resized to. */
export interface ResizeCeiling {
  cpus: number;
  memoryMb: number;
}

/** Default ceiling, as a multiple of the size the contract starts the session with. */
export const DEFAULT_CEILING_FACTOR = 4;
/** Smallest memory limit accepted (the contract's own minimum). */
export const MIN_MEMORY_MB = 64;
/** Smallest CPU limit accepted (the contract's own minimum). */
export const MIN_CPUS = 0.1;

const MB = 1024 * 1024;

/** The resize ceiling of a session, from its contract. */
export function resizeCeilingOf(session: Pick<SessionRecord, 'contract' | 'resources'>): ResizeCeiling {
  const declared: Partial<ContractResources> = session.contract.resources;
  const startCpus = declared.cpus ?? session.resources.cpus;
  const startMemoryMb = declared.memoryMb ?? session.resources.memoryMb;
  return {
    cpus: declared.maxCpus ?? startCpus * DEFAULT_CEILING_FACTOR,
    memoryMb: declared.maxMemoryMb ?? startMemoryMb * DEFAULT_CEILING_FACTOR,
  };
}

/** Changes the limits of running session machines. */
export class SessionResizer {
  constructor(private readonly sessions: SessionService) {}

  /** Resizes the session's machine in place and records it (`session.resized`). */
  async resize(sessionId: string, request: ResizeRequest): Promise<SessionRecord> {
    const session = await this.sessions.getOwned(sessionId);
    if (session.mode !== 'machine') {
      throw new AirlockError('INVALID_STATE', `session ${sessionId} runs each call in a fresh sandbox and has no machine to resize; per-call sandboxes take the contract's resources`, {
        details: { sessionId, mode: session.mode },
      });
    }
    const driver = this.sessions.driverOf(session);
    if (!driver.capabilities.resize) {
      throw new AirlockError('INVALID_STATE', `session ${sessionId} runs on the ${driver.name} driver, which cannot resize a running machine; create a new session with the size you need`, {
        details: { sessionId, driver: driver.name, capability: 'resize' },
      });
    }
    const ceiling = resizeCeilingOf(session);
    validate(request, ceiling);
    return this.sessions.locks.exclusive(`${sessionId}#resize`, async () => {
      const { result } = await this.sessions.withMachine(sessionId, async (handle, current) => {
        const from: Pick<SandboxResources, 'cpus' | 'memoryMb'> = { cpus: current.resources.cpus, memoryMb: current.resources.memoryMb };
        const to = { cpus: request.cpus ?? from.cpus, memoryMb: request.memoryMb ?? from.memoryMb };
        if (to.memoryMb < from.memoryMb) {
          const usage = await driver.usage(handle);
          if (usage.memoryBytes > to.memoryMb * MB) {
            throw new AirlockError(
              'INVALID_STATE',
              `cannot shrink session ${sessionId} to ${to.memoryMb} MB: its machine uses ${Math.ceil(usage.memoryBytes / MB)} MB now; stop some processes or choose a higher limit`,
              { details: { sessionId, requestedMemoryMb: to.memoryMb, usedMemoryMb: Math.ceil(usage.memoryBytes / MB) } },
            );
          }
        }
        // The driver writes memory first, and the kernel refuses a limit below use (EBUSY) before anything changed.
        await driver.resize(handle, to);
        return this.sessions.records.update(sessionId, (fresh) => ({ resources: { ...fresh.resources, ...to } }), { type: 'session.resized', data: { from, to, ceiling } });
      });
      return result;
    });
  }
}

function validate(request: ResizeRequest, ceiling: ResizeCeiling): void {
  const { cpus, memoryMb } = request;
  if (cpus === undefined && memoryMb === undefined) {
    throw new AirlockError('INVALID_ARGUMENTS', 'give cpus, memoryMb or both, e.g. `airlock sessions resize ID --cpus 2 --memory 1G`', { details: { field: 'cpus' } });
  }
  if (cpus !== undefined && !(Number.isFinite(cpus) && cpus >= MIN_CPUS)) {
    throw new AirlockError('INVALID_ARGUMENTS', `cpus must be a number of at least ${MIN_CPUS} (got ${cpus})`, { details: { field: 'cpus' } });
  }
  if (memoryMb !== undefined && !(Number.isInteger(memoryMb) && memoryMb >= MIN_MEMORY_MB)) {
    throw new AirlockError('INVALID_ARGUMENTS', `memoryMb must be a whole number of at least ${MIN_MEMORY_MB} (got ${memoryMb})`, { details: { field: 'memoryMb' } });
  }
  if (cpus !== undefined && cpus > ceiling.cpus) {
    throw new AirlockError('INVALID_ARGUMENTS', `cpus ${cpus} is above this session's ceiling of ${ceiling.cpus}; raise resources.maxCpus in the contract of a new session`, {
      details: { field: 'cpus', ceiling },
    });
  }
  if (memoryMb !== undefined && memoryMb > ceiling.memoryMb) {
    throw new AirlockError('INVALID_ARGUMENTS', `memory ${memoryMb} MB is above this session's ceiling of ${ceiling.memoryMb} MB; raise resources.maxMemoryMb in the contract of a new session`, {
      details: { field: 'memoryMb', ceiling },
    });
  }
}
