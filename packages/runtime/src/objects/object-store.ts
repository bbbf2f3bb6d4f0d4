/**
 * The few object-storage operations that snapshots need, with S3's
 * semantics: keys in one flat namespace, whole-object writes that are
 * visible to every reader once acknowledged (strong read-after-write, which
 * S3, MinIO, Ceph and R2 all give), and listing by prefix.
 */

/** What a listing or a head request tells about one object. */
export interface StoredObject {
  key: string;
  sizeBytes: number;
  lastModified: Date;
  /** changes whenever the object is rewritten with other content: how a heartbeat is seen without comparing clocks */
  etag: string;
}

/** Reads, writes, lists and deletes objects of one bucket. */
export interface ObjectStore {
  /** Where the objects are, for messages (`s3://bucket/prefix`). */
  readonly description: string;
  /** Fails with OBJECT_STORAGE_UNAVAILABLE (saying why) when the bucket cannot be reached or used. */
  check(): Promise<void>;
  /** Writes the whole object, replacing any object of that key. */
  put(key: string, body: Buffer): Promise<void>;
  /** The object's bytes, or undefined when it does not exist. */
  get(key: string): Promise<Buffer | undefined>;
  /** Facts about the object, or undefined when it does not exist. */
  head(key: string): Promise<StoredObject | undefined>;
  /** Every object whose key starts with `prefix`. */
  list(prefix: string): Promise<StoredObject[]>;
  /** Deletes the object; deleting a missing one is not an error. */
  delete(key: string): Promise<void>;
  /** Releases connections. */
  close(): void;
}
