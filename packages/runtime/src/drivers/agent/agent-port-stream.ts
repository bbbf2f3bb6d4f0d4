/**
 * A Duplex to a TCP port on the sandbox's own loopback, relayed by the agent
 * (CONNECT). Flow control both ways: the agent reads the service only as
 * fast as this stream's consumer reads, and writes wait for the agent's
 * window. Ending the writable side half-closes the connection; destroying
 * the stream closes it.
 */
import type { Duplex } from 'node:stream';
import { AirlockError } from '../../core/errors.js';
import type { AgentConnection } from './agent-connection.js';
import type { AgentStream } from './agent-stream.js';
import { withTimeout } from './with-timeout.js';
import { AgentDuplex } from './agent-duplex.js';
import { MessageType, Tag } from './agent-protocol.js';
import { FieldWriter } from './frame-codec.js';

/** How long the agent may take to connect to the service. */
const CONNECT_TIMEOUT_MS = 10_000;

/** Opens a relay to 127.0.0.1:`port` in the sandbox; rejects with PORT_UNREACHABLE when nothing listens. */
export async function openPortStream(connection: AgentConnection, port: number): Promise<Duplex> {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new AirlockError('INVALID_ARGUMENTS', `port must be a whole number from 1 to 65535 (got ${port})`);
  }
  // eslint-disable-next-line prefer-const -- the stream's callbacks read it before it is assigned
  let duplex: PortStream | undefined;
  // Bytes that arrive right behind CONNECTED, before the Duplex exists.
  const early: (Buffer | null)[] = [];
  let connected!: () => void;
  const ready = new Promise<void>((resolve) => (connected = resolve));
  const stream = connection.request(MessageType.CONNECT, new FieldWriter().int(Tag.PORT, port).finish(), { operation: `connecting to port ${port} of` }, {
    onMessage: (type) => {
      if (type === MessageType.CONNECTED) connected();
    },
    onData: (_channel, chunk) => (duplex ? duplex.deliver(chunk) : early.push(chunk)),
    onEnd: () => (duplex ? duplex.deliver(null) : early.push(null)),
  });
  stream.autoGrant = false;
  try {
    await withTimeout(Promise.race([ready, stream.done.then(() => undefined)]), CONNECT_TIMEOUT_MS, () => {
      stream.cancel();
      return new AirlockError('PORT_UNREACHABLE', `connecting to port ${port} in ${connection.label} took longer than ${CONNECT_TIMEOUT_MS} ms`, { details: { port } });
    });
  } catch (error) {
    if (error instanceof AirlockError && error.code === 'PORT_UNREACHABLE') {
      throw new AirlockError('PORT_UNREACHABLE', `nothing listens on port ${port} in sandbox ${connection.label}; start the service (e.g. \`airlock exec ID --detach -- CMD\`) and retry`, {
        details: { port, sandboxId: connection.label },
        cause: error,
      });
    }
    throw error;
  }
  duplex = new PortStream(stream);
  for (const chunk of early) duplex.deliver(chunk);
  return duplex;
}

/** The Duplex over one CONNECT stream: ending the writable side half-closes the connection. */
class PortStream extends AgentDuplex {
  constructor(stream: AgentStream) {
    super(stream);
    stream.done.then(
      () => this.push(null),
      (error: unknown) => {
        if (!this.destroyed) this.destroy(error instanceof Error ? error : new Error(String(error)));
      },
    );
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.stream.endInput();
    callback();
  }
}
