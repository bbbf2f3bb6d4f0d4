/**
 * `--objects s3://BUCKET[/prefix]`: where snapshots live in object storage.
 * Only the bucket and a key prefix are given here; the endpoint, region and
 * credentials come from the standard AWS environment variables (see
 * s3-client-config.ts), so one URL works against S3, MinIO, Ceph or R2.
 */
import { AirlockError } from '../core/errors.js';

/** A bucket and the key prefix under which Airlock keeps its objects (empty, or ending in `/`). */
export interface ObjectStorageLocation {
  bucket: string;
  prefix: string;
}

// S3's bucket naming rules: 3–63 characters, lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit.
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const PREFIX_SEGMENT = /^[A-Za-z0-9._-]+$/;

/** Parses `s3://BUCKET[/prefix]`; throws INVALID_ARGUMENTS saying what a valid value looks like. */
export function parseObjectStorageUrl(text: string): ObjectStorageLocation {
  const fail = (why: string): never => {
    throw new AirlockError('INVALID_ARGUMENTS', `--objects ${JSON.stringify(text)}: ${why}; give s3://BUCKET or s3://BUCKET/PREFIX (the endpoint, region and credentials come from AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)`, {
      details: { objects: text },
    });
  };
  if (!text.includes('://')) return fail('it is not an s3:// URL');
  if (!text.trim().startsWith('s3://')) return fail('only the s3:// scheme is supported');
  const match = /^s3:\/\/([^/?#]*)(\/[^?#]*)?$/.exec(text.trim());
  if (!match) return fail('a query string or fragment is not allowed');
  const bucket = match[1] ?? '';
  if (!bucket) return fail('the bucket name is missing');
  if (!BUCKET.test(bucket) || bucket.includes('..') || /^\d+\.\d+\.\d+\.\d+$/.test(bucket)) {
    return fail(`${JSON.stringify(bucket)} is not a valid bucket name (3 to 63 lowercase letters, digits, dots and hyphens)`);
  }
  const segments = (match[2] ?? '').split('/').filter((segment) => segment !== '');
  for (const segment of segments) {
    if (segment === '.' || segment === '..' || !PREFIX_SEGMENT.test(segment)) {
      return fail(`the prefix segment ${JSON.stringify(segment)} is not allowed (use letters, digits, '.', '_' and '-', and no '..')`);
    }
  }
  const prefix = segments.length > 0 ? `${segments.join('/')}/` : '';
  if (prefix.length > 512) return fail('the prefix is longer than 512 characters');
  return { bucket, prefix };
}

/** The location written back as a URL, for logs and messages. */
export function formatObjectStorageUrl(location: ObjectStorageLocation): string {
  return `s3://${location.bucket}${location.prefix ? `/${location.prefix.replace(/\/$/, '')}` : ''}`;
}
