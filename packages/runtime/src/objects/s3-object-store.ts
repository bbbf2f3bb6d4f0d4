/**
 * ObjectStore on S3 or any S3-compatible service, configured only from the
 * standard AWS environment: `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL` (a
 * custom endpoint switches to path-style addressing, which MinIO, Ceph and
 * most self-hosted services need), `AWS_REGION` / `AWS_DEFAULT_REGION`, and
 * credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
 * `AWS_SESSION_TOKEN`, else the SDK's default chain (profiles, web identity,
 * instance roles).
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { AirlockError } from '../core/errors.js';
import type { ObjectStore, StoredObject } from './object-store.js';
import { formatObjectStorageUrl, type ObjectStorageLocation } from './object-storage-url.js';

/** The S3 client settings Airlock derives from an environment; exported for tests and `serve`'s start-up line. */
export function s3ClientConfig(env: NodeJS.ProcessEnv): S3ClientConfig & { endpoint?: string; region: string } {
  const endpoint = env['AWS_ENDPOINT_URL_S3'] || env['AWS_ENDPOINT_URL'] || undefined;
  const region = env['AWS_REGION'] || env['AWS_DEFAULT_REGION'] || (endpoint ? 'us-east-1' : undefined);
  if (!region) {
    throw new AirlockError('INVALID_ARGUMENTS', 'object storage needs a region: set AWS_REGION (e.g. us-east-1), or AWS_ENDPOINT_URL for an S3-compatible service', {
      details: { missing: 'AWS_REGION' },
    });
  }
  if (endpoint !== undefined && !/^https?:\/\/[^/\s]+/.test(endpoint)) {
    throw new AirlockError('INVALID_ARGUMENTS', `AWS_ENDPOINT_URL ${JSON.stringify(endpoint)} is not an http(s) URL; give e.g. http://127.0.0.1:9000`, {
      details: { endpoint },
    });
  }
  const accessKeyId = env['AWS_ACCESS_KEY_ID'];
  const secretAccessKey = env['AWS_SECRET_ACCESS_KEY'];
  const sessionToken = env['AWS_SESSION_TOKEN'];
  return {
    region,
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    // Keys in the environment are used as given; without them the SDK's chain looks further (profiles, web identity, instance roles).
    ...(accessKeyId && secretAccessKey ? { credentials: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } } : {}),
    // Flexible checksums (CRC32 headers, aws-chunked bodies) are not understood by every S3-compatible
    // service; every chunk carries its own sha256, verified on read, so only what an operation requires is sent.
    requestChecksumCalculation: env['AWS_REQUEST_CHECKSUM_CALCULATION'] === 'WHEN_SUPPORTED' ? 'WHEN_SUPPORTED' : 'WHEN_REQUIRED',
    responseChecksumValidation: env['AWS_RESPONSE_CHECKSUM_VALIDATION'] === 'WHEN_SUPPORTED' ? 'WHEN_SUPPORTED' : 'WHEN_REQUIRED',
    // A dead endpoint must fail a suspend in seconds (the machine waits, paused), not hang it.
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 120_000 },
  };
}

/** Objects of one bucket (under one prefix) in S3 or an S3-compatible service. */
export class S3ObjectStore implements ObjectStore {
  readonly description: string;
  private readonly client: S3Client;
  private readonly endpoint: string;

  constructor(
    private readonly location: ObjectStorageLocation,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    // The SDK warns on every start that later versions will need Node 22; Airlock pins a version that runs on Node 20.
    process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
    const config = s3ClientConfig(env);
    this.client = new S3Client(config);
    this.endpoint = config.endpoint ?? `S3 in ${config.region}`;
    this.description = formatObjectStorageUrl(location);
  }

  async check(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.location.bucket }));
    } catch (error) {
      if (statusOf(error) === 404) {
        throw new AirlockError('OBJECT_STORAGE_UNAVAILABLE', `bucket ${this.location.bucket} does not exist at ${this.endpoint}; create it, or point --objects at an existing bucket`, {
          cause: error,
          details: { bucket: this.location.bucket },
        });
      }
      throw this.unavailable(error, 'checking the bucket', '');
    }
  }

  async put(key: string, body: Buffer): Promise<void> {
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.location.bucket, Key: this.location.prefix + key, Body: body }));
    } catch (error) {
      throw this.unavailable(error, 'writing', key);
    }
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      const response = await this.client.send(new GetObjectCommand({ Bucket: this.location.bucket, Key: this.location.prefix + key }));
      if (!response.Body) return Buffer.alloc(0);
      return Buffer.from(await response.Body.transformToByteArray());
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw this.unavailable(error, 'reading', key);
    }
  }

  async head(key: string): Promise<StoredObject | undefined> {
    try {
      const response = await this.client.send(new HeadObjectCommand({ Bucket: this.location.bucket, Key: this.location.prefix + key }));
      return { key, sizeBytes: response.ContentLength ?? 0, lastModified: response.LastModified ?? new Date(0), etag: response.ETag ?? '' };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw this.unavailable(error, 'looking up', key);
    }
  }

  async list(prefix: string): Promise<StoredObject[]> {
    const found: StoredObject[] = [];
    let token: string | undefined;
    try {
      do {
        const response = await this.client.send(
          new ListObjectsV2Command({ Bucket: this.location.bucket, Prefix: this.location.prefix + prefix, ...(token ? { ContinuationToken: token } : {}) }),
        );
        for (const item of response.Contents ?? []) {
          if (!item.Key) continue;
          found.push({ key: item.Key.slice(this.location.prefix.length), sizeBytes: item.Size ?? 0, lastModified: item.LastModified ?? new Date(0), etag: item.ETag ?? '' });
        }
        token = response.IsTruncated ? response.NextContinuationToken : undefined;
      } while (token);
    } catch (error) {
      throw this.unavailable(error, 'listing', prefix);
    }
    return found;
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key: this.location.prefix + key }));
    } catch (error) {
      if (isMissing(error)) return;
      throw this.unavailable(error, 'deleting', key);
    }
  }

  close(): void {
    this.client.destroy();
  }

  private unavailable(error: unknown, doing: string, key: string): AirlockError {
    const status = statusOf(error);
    const name = (error as { name?: string }).name ?? '';
    const reason =
      status === 403 ? `access denied (${name || 'HTTP 403'}); check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY and the bucket's policy`
      : status === 404 ? `bucket ${this.location.bucket} does not exist; create it`
      : status !== undefined ? `the service answered HTTP ${status} (${name})`
      : `cannot reach ${this.endpoint} (${(error as { code?: string }).code ?? (error instanceof Error ? error.message : String(error))})`;
    return new AirlockError('OBJECT_STORAGE_UNAVAILABLE', `object storage ${this.description}: ${doing} ${key || 'the bucket'} failed: ${reason}`, {
      cause: error,
      details: { objects: this.description, key, ...(status === undefined ? {} : { httpStatus: status }) },
    });
  }
}

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

function isMissing(error: unknown): boolean {
  const name = (error as { name?: string }).name;
  return name === 'NoSuchKey' || name === 'NotFound' || (statusOf(error) === 404 && name !== 'NoSuchBucket');
}
