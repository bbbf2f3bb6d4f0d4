/**
 * An S3-compatible server on loopback for tests (object-storage-process.ts,
 * run as a child process): one bucket, the default S3RVER credentials, and
 * an outage on demand (`stop()` cuts connections and refuses new ones,
 * `resume()` answers again on the same port with the same objects).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** The bucket every test server has. */
export const TEST_BUCKET = 'airlock-test';

const SCRIPT = fileURLToPath(new URL('./object-storage-process.js', import.meta.url));

/** A running test server and the AWS environment that points at it. */
export class ObjectStorageServer {
  private readonly waiting: ((line: string) => void)[] = [];

  private constructor(
    private readonly child: ChildProcess,
    private readonly lines: Interface,
    readonly port: number,
  ) {
    lines.on('line', (line) => this.waiting.shift()?.(line));
  }

  /** Starts a server on a free loopback port. */
  static async start(): Promise<ObjectStorageServer> {
    const child = spawn(process.execPath, [SCRIPT], { env: { ...process.env, TEST_BUCKET }, stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout! });
    const first = await new Promise<string>((resolve, reject) => {
      lines.once('line', resolve);
      child.once('exit', (code) => reject(new Error(`the test object storage exited with ${code} before listening`)));
    });
    return new ObjectStorageServer(child, lines, (JSON.parse(first) as { port: number }).port);
  }

  /** The standard AWS variables for a client of this server. */
  get env(): Record<string, string> {
    return {
      AWS_ENDPOINT_URL: `http://127.0.0.1:${this.port}`,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    };
  }

  /** Stops answering: open connections are cut and new ones refused. Stored objects stay. */
  stop(): Promise<void> {
    return this.command('stop');
  }

  /** Answers again, on the same port, with the same objects. */
  resume(): Promise<void> {
    return this.command('resume');
  }

  /** Stops the server process and deletes its data. */
  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin?.end();
    await exited;
    this.lines.close();
  }

  private async command(name: 'stop' | 'resume'): Promise<void> {
    const answer = new Promise<string>((resolve) => this.waiting.push(resolve));
    this.child.stdin?.write(`${name}\n`);
    const line = await answer;
    if (line !== `ok ${name}`) throw new Error(`the test object storage answered ${line} to ${name}`);
  }
}
