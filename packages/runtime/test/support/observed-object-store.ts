/**
 * An ObjectStore that passes every call to a real one and records it, and
 * can add a random delay before each call, to shuffle the order in which
 * concurrent uploads and collections reach the server.
 */
import type { ObjectStore, StoredObject } from '../../src/objects/object-store.js';

/** One recorded call. */
export interface ObservedCall {
  operation: 'put' | 'get' | 'head' | 'list' | 'delete';
  key: string;
}

/** Records (and optionally delays) the calls made to a real store. */
export class ObservedObjectStore implements ObjectStore {
  readonly calls: ObservedCall[] = [];
  /** milliseconds to wait before a call; none by default */
  delay: () => number = () => 0;

  constructor(private readonly inner: ObjectStore) {}

  get description(): string {
    return this.inner.description;
  }

  /** How many calls of `operation` named a key starting with `prefix`. */
  count(operation: ObservedCall['operation'], prefix: string): number {
    return this.calls.filter((call) => call.operation === operation && call.key.startsWith(prefix)).length;
  }

  async check(): Promise<void> {
    await this.inner.check();
  }
  async put(key: string, body: Buffer): Promise<void> {
    await this.before('put', key);
    await this.inner.put(key, body);
  }
  async get(key: string): Promise<Buffer | undefined> {
    await this.before('get', key);
    return this.inner.get(key);
  }
  async head(key: string): Promise<StoredObject | undefined> {
    await this.before('head', key);
    return this.inner.head(key);
  }
  async list(prefix: string): Promise<StoredObject[]> {
    await this.before('list', prefix);
    // s3rver walks its directories to list, and answers 500 when a concurrent delete removes one
    // under it (S3 lists atomically). Those are retried here; other failures pass through.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.inner.list(prefix);
      } catch (error) {
        if (attempt >= 5 || (error as { details?: { httpStatus?: number } }).details?.httpStatus !== 500) throw error;
      }
    }
  }
  async delete(key: string): Promise<void> {
    await this.before('delete', key);
    await this.inner.delete(key);
  }
  close(): void {
    this.inner.close();
  }

  private async before(operation: ObservedCall['operation'], key: string): Promise<void> {
    this.calls.push({ operation, key });
    const ms = this.delay();
    if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
  }
}
