/**
 * A byte stream to a TCP port on a microVM's loopback: the toolbox busybox's
 * `nc 127.0.0.1 PORT`, run by the guest agent, its stdin and stdout the two
 * directions (as the gVisor driver does over `runsc exec`, ADR 0009). busybox
 * nc half-closes when its stdin ends and exits when the peer closes.
 */
import { Duplex } from 'node:stream';
import { AirlockError } from '../../core/errors.js';
import type { GuestAgentClient, GuestProcess } from './guest-agent-client.js';

/** Opens a stream to 127.0.0.1:`port` inside the VM. */
export function connectGuestPort(client: GuestAgentClient, busyboxPath: string, sandboxId: string, port: number): Duplex {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new AirlockError('INVALID_ARGUMENTS', `port must be a whole number from 1 to 65535 (got ${port})`);
  }
  return new GuestPortStream(client, busyboxPath, sandboxId, port);
}

class GuestPortStream extends Duplex {
  private stderr = '';
  private received = 0;
  private readonly process: GuestProcess;

  constructor(client: GuestAgentClient, busyboxPath: string, sandboxId: string, port: number) {
    super();
    this.process = client.spawn({
      argv: [busyboxPath, 'nc', '127.0.0.1', String(port)],
      cwd: '/',
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      stdin: true,
      onStdout: (chunk) => {
        this.received += chunk.length;
        this.push(chunk);
      },
      onStderr: (chunk) => {
        if (this.stderr.length < 4096) this.stderr += chunk.toString('utf8');
      },
    });
    this.process.exited.then(
      (ended) => {
        if (ended.exitCode !== 0 && this.received === 0) {
          const refused = /refused|can't connect/i.test(this.stderr);
          this.destroy(
            new AirlockError(
              'PORT_UNREACHABLE',
              refused
                ? `nothing listens on port ${port} in sandbox ${sandboxId}; start the service (e.g. \`airlock exec ID --detach -- CMD\`) and retry`
                : `cannot reach port ${port} in sandbox ${sandboxId}: ${this.stderr.trim() || `nc exited with ${ended.exitCode}`}`,
              { details: { port, sandboxId } },
            ),
          );
        } else {
          this.push(null);
        }
      },
      (error: Error) => this.destroy(error),
    );
  }

  override _read(): void {
    // Output is pushed as the agent delivers it; the agent's own buffering bounds it.
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.process.write(chunk);
    callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.process.end();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // Ending stdin makes nc exit once the peer is done; the kill covers a peer that never closes.
    this.process.end();
    this.process.kill();
    this.process.exited.catch(() => undefined);
    callback(error);
  }
}
