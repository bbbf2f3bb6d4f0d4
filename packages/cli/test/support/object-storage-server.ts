/**
 * An S3-compatible server on loopback for end-to-end tests: the runtime's
 * test server process (s3rver behind a relay that can play an outage, see
 * packages/runtime/test/support/object-storage-process.ts), plus a client
 * for looking into the bucket.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { S3Client, ListObjectsV2Command, GetObjectCommand } from '@aws-sdk/client-s3';

/** The bucket the test server has. */
export const TEST_BUCKET = 'airlock-test';
const SCRIPT = fileURLToPath(new URL('../../../../runtime/dist/test/support/object-storage-process.js', import.meta.url));

/** A running test server and the AWS environment that points at it. */
export class ObjectStorageServer {
  private readonly waiting: ((line: string) => void)[] = [];
  private readonly client: S3Client;

  private constructor(
    private readonly child: ChildProcess,
    private readonly lines: Interface,
    readonly port: number,
  ) {
    lines.on('line', (line) => this.waiting.shift()?.(line));
    this.client = new S3Client({ endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  }

  /** Starts the server on a free loopback port. */
  static async start(): Promise<ObjectStorageServer> {
    const child = spawn(process.execPath, [SCRIPT], { env: { ...process.env, TEST_BUCKET }, stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout! });
    const first = await new Promise<string>((resolve, reject) => {
      lines.once('line', resolve);
      child.once('exit', (code) => reject(new Error(`the test object storage exited with ${code} before listening`)));
    });
    return new ObjectStorageServer(child, lines, (JSON.parse(first) as { port: number }).port);
  }

  /** The standard AWS variables for a server or client of this bucket. */
  get env(): Record<string, string> {
    return {
      AWS_ENDPOINT_URL: `http://127.0.0.1:${this.port}`,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    };
  }

  /** Keys under `prefix` in the bucket. */
  async keys(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: TEST_BUCKET, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }));
      keys.push(...(page.Contents ?? []).flatMap((item) => (item.Key ? [item.Key] : [])));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys;
  }

  /** The object's content as text. */
  async read(key: string): Promise<string> {
    const response = await this.client.send(new GetObjectCommand({ Bucket: TEST_BUCKET, Key: key }));
    return (await response.Body?.transformToString()) ?? '';
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
    this.client.destroy();
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
