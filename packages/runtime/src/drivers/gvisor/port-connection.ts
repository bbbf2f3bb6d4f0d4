/**
 * A byte stream to a TCP port on a sandbox's loopback. Sandboxes run with
 * `--network=none`, so nothing on the host can dial into them; instead each
 * connection is a transient `runsc exec` of the toolbox busybox's `nc`, whose
 * stdin and stdout are the two directions of the stream. busybox nc
 * half-closes the socket when its stdin ends and exits when the peer closes,
 * so one HTTP exchange with `Connection: close` ends the exec by itself.
 *
 * The exec holds host pipes inside the sandbox, which would spoil a
 * checkpoint: callers hold the session's shared lock for the stream's life.
 */
import type { ChildProcess } from 'node:child_process';
import { Duplex } from 'node:stream';
import { AirlockError } from '../../core/errors.js';
import { TOOLBOX_PATH } from './in-sandbox-scripts.js';
import type { Runsc } from './runsc.js';

/** After the stream is destroyed, how long the exec may take to notice before it is killed. */
const EXIT_GRACE_MS = 2_000;

/** Opens a stream to 127.0.0.1:`port` inside the container. */
export function connectPort(runsc: Runsc, containerId: string, sandboxId: string, port: number): Duplex {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new AirlockError('INVALID_ARGUMENTS', `port must be a whole number from 1 to 65535 (got ${port})`);
  }
  const child = runsc.spawn(['exec', containerId, TOOLBOX_PATH, 'nc', '127.0.0.1', String(port)], { stdio: 'pipe' });
  return new NcStream(child, sandboxId, port);
}

/** The Duplex over one `runsc exec … nc` child. */
class NcStream extends Duplex {
  private stderr = '';
  private received = 0;

  constructor(
    private readonly child: ChildProcess,
    sandboxId: string,
    port: number,
  ) {
    super();
    const { stdout, stdin, stderr } = child;
    if (!stdout || !stdin || !stderr) throw new AirlockError('INTERNAL', 'runsc exec was spawned without pipes');
    stderr.on('data', (chunk: Buffer) => {
      if (this.stderr.length < 4096) this.stderr += chunk.toString('utf8');
    });
    stdout.on('data', (chunk: Buffer) => {
      this.received += chunk.length;
      if (!this.push(chunk)) stdout.pause();
    });
    // The peer's side may have closed already; a late write's EPIPE is the end of the stream, not an error.
    stdin.on('error', () => undefined);
    const ended = new Promise<void>((resolve) => stdout.once('end', resolve).once('close', resolve));
    child.once('error', (error) => this.destroy(new AirlockError('DRIVER_FAILED', `cannot run runsc exec for port ${port}: ${error.message}`, { cause: error })));
    child.once('exit', (code) => {
      void ended.then(() => {
        if (code !== 0 && this.received === 0) {
          const refused = /refused|can't connect/i.test(this.stderr);
          this.destroy(
            new AirlockError(
              'PORT_UNREACHABLE',
              refused
                ? `nothing listens on port ${port} in sandbox ${sandboxId}; start the service (e.g. \`airlock exec ID --detach -- CMD\`) and retry`
                : `cannot reach port ${port} in sandbox ${sandboxId}: ${this.stderr.trim() || `runsc exec exited with ${code}`}`,
              { details: { port, sandboxId } },
            ),
          );
        } else {
          this.push(null);
        }
      });
    });
  }

  override _read(): void {
    this.child.stdout?.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const stdin = this.child.stdin;
    if (!stdin || stdin.destroyed) return callback();
    stdin.write(chunk, () => callback());
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.child.stdin?.end();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // Closing stdin and stdout makes nc exit (EOF, then EPIPE); the kill is the fallback.
    this.child.stdin?.destroy();
    this.child.stdout?.destroy();
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const timer = setTimeout(() => this.child.kill('SIGKILL'), EXIT_GRACE_MS);
      timer.unref();
      this.child.once('exit', () => clearTimeout(timer));
    }
    callback(error);
  }
}
