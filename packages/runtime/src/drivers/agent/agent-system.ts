/**
 * The agent's machine-level operations: the process list, signals to one
 * process, and a fresh identity (hostname, machine id, entropy).
 */
import { constants } from 'node:os';
import { AirlockError } from '../../core/errors.js';
import type { SandboxIdentity, SandboxProcess } from '../../core/sandbox-driver.js';
import type { AgentConnection } from './agent-connection.js';
import { withTimeout } from './with-timeout.js';
import { MessageType, Tag } from './agent-protocol.js';
import { AgentProtocolError, FieldWriter, type Fields } from './frame-codec.js';

const TIMEOUT_MS = 30_000;
/** Processes a listing returns at most (the agent stops there too). */
const PROCESS_LIMIT = 10_000;
const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const MACHINE_ID = /^[0-9a-f]{32}$/;

/** Every process in the sandbox. */
export async function listProcesses(connection: AgentConnection): Promise<SandboxProcess[]> {
  const processes: SandboxProcess[] = [];
  const stream = connection.request(MessageType.PROCESSES, Buffer.alloc(0), { operation: 'listing processes of' }, {
    onMessage: (type, fields) => {
      if (type !== MessageType.PROCESS || processes.length >= PROCESS_LIMIT) throw new AgentProtocolError('an unexpected or excess PROCESS frame');
      processes.push(processOf(fields));
    },
  });
  await timed(connection, stream.done, 'listing processes');
  return processes.sort((a, b) => a.pid - b.pid);
}

/** Sends `signal` (a name like "TERM" or a number) to one process; never to pid 1. */
export async function signalProcess(connection: AgentConnection, pid: number, signal: string | number): Promise<void> {
  if (!Number.isInteger(pid) || pid <= 1) throw new AirlockError('INVALID_ARGUMENTS', `pid must be a whole number above 1 (pid 1 is the machine's agent); got ${pid}`);
  const number = signalNumber(signal);
  const stream = connection.request(MessageType.KILL, new FieldWriter().int(Tag.PID, pid).int(Tag.SIGNAL, number).finish(), { operation: `signalling process ${pid} in` });
  try {
    await timed(connection, stream.done, 'signalling a process');
  } catch (error) {
    if (error instanceof AirlockError && error.details['errno'] === constants.errno.ESRCH) {
      throw new AirlockError('NOT_FOUND', `no process ${pid} in the sandbox; list them first`, { details: { pid } });
    }
    throw error;
  }
}

/** Gives the machine its own hostname, machine id and a reseeded RNG. */
export async function applyIdentity(connection: AgentConnection, identity: SandboxIdentity): Promise<void> {
  if (!HOSTNAME.test(identity.hostname)) {
    throw new AirlockError('INVALID_ARGUMENTS', `invalid hostname ${JSON.stringify(identity.hostname)}: use 1-63 letters, digits and '-' (not at either end)`);
  }
  if (!MACHINE_ID.test(identity.machineId)) throw new AirlockError('INVALID_ARGUMENTS', 'machineId must be 32 lowercase hex digits');
  const fields = new FieldWriter().string(Tag.HOSTNAME, identity.hostname).string(Tag.MACHINE_ID, identity.machineId).bytes(Tag.ENTROPY, identity.entropy);
  const stream = connection.request(MessageType.IDENTITY, fields.finish(), { operation: 'giving an identity to' });
  try {
    await timed(connection, stream.done, 'giving the sandbox its identity');
  } catch (error) {
    if (!(error instanceof AirlockError) || error.code === 'SANDBOX_NOT_ANSWERING') throw error;
    const step = String(error.details['detail'] ?? 'identity');
    throw new AirlockError('DRIVER_FAILED', `giving sandbox ${connection.label} its identity failed at ${step}: ${error.message}`, { cause: error, details: { step } });
  }
}

/** A signal name ("TERM", "SIGTERM") or number as its number. */
export function signalNumber(signal: string | number): number {
  if (typeof signal === 'number') {
    if (Number.isInteger(signal) && signal >= 0 && signal < 65) return signal;
  } else {
    const name = (signal.startsWith('SIG') ? signal : `SIG${signal}`).toUpperCase() as keyof typeof constants.signals;
    const number = constants.signals[name];
    if (number !== undefined) return number;
  }
  throw new AirlockError('INVALID_ARGUMENTS', `unknown signal ${JSON.stringify(signal)}; use a name like TERM or KILL, or a number`);
}

function processOf(fields: Fields): SandboxProcess {
  return {
    pid: fields.int(Tag.PID),
    parentPid: fields.int(Tag.PARENT_PID, 0),
    group: fields.int(Tag.GROUP, 0),
    state: fields.string(Tag.STATE, '?', 1),
    name: fields.string(Tag.NAME, '', 64),
    argv: fields.strings(Tag.ARG).slice(0, 1024),
  };
}

function timed<T>(connection: AgentConnection, done: Promise<T>, what: string): Promise<T> {
  return withTimeout(done, TIMEOUT_MS, () => new AirlockError('SANDBOX_NOT_ANSWERING', `${what} in ${connection.label} took longer than ${TIMEOUT_MS} ms`, { details: { reason: 'timeout' } }));
}
