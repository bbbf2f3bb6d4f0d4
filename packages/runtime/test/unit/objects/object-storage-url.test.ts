import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatObjectStorageUrl, parseObjectStorageUrl } from '../../../src/objects/object-storage-url.js';
import { s3ClientConfig } from '../../../src/objects/s3-object-store.js';

describe('--objects s3://BUCKET[/prefix]', () => {
  it('takes a bucket and an optional prefix, normalized to end in a slash', () => {
    assert.deepEqual(parseObjectStorageUrl('s3://snapshots'), { bucket: 'snapshots', prefix: '' });
    assert.deepEqual(parseObjectStorageUrl('s3://snap-shots.eu/airlock/prod'), { bucket: 'snap-shots.eu', prefix: 'airlock/prod/' });
    assert.deepEqual(parseObjectStorageUrl('s3://abc/airlock/'), { bucket: 'abc', prefix: 'airlock/' });
    assert.equal(formatObjectStorageUrl(parseObjectStorageUrl('s3://abc/a/b/')), 's3://abc/a/b');
  });

  for (const [input, why] of [
    ['snapshots', /not an s3:\/\/ URL/],
    ['https://s3.amazonaws.com/bucket', /only the s3:\/\/ scheme/],
    ['s3://', /bucket name is missing/],
    ['s3:///prefix', /bucket name is missing/],
    ['s3://Upper_Case', /not a valid bucket name/],
    ['s3://ab', /not a valid bucket name/],
    ['s3://a..b', /not a valid bucket name/],
    ['s3://10.0.0.1', /not a valid bucket name/],
    ['s3://bucket/../etc', /segment "\.\." is not allowed/],
    ['s3://bucket/a b', /segment "a b" is not allowed/],
    ['s3://bucket/x?versionId=1', /query string or fragment is not allowed/],
  ] as const) {
    it(`refuses ${JSON.stringify(input)} with a message saying what to give`, () => {
      assert.throws(
        () => parseObjectStorageUrl(input),
        (error: Error & { code?: string }) => {
          assert.equal(error.code, 'INVALID_ARGUMENTS');
          assert.match(error.message, why);
          assert.match(error.message, /give s3:\/\/BUCKET or s3:\/\/BUCKET\/PREFIX/);
          assert.match(error.message, /AWS_ENDPOINT_URL/);
          return true;
        },
      );
    });
  }
});

describe('the S3 client settings from the AWS environment', () => {
  it('uses path-style addressing whenever a custom endpoint is set, and defaults the region then', () => {
    const config = s3ClientConfig({ AWS_ENDPOINT_URL: 'http://127.0.0.1:9000' });
    assert.equal(config.endpoint, 'http://127.0.0.1:9000');
    assert.equal(config.forcePathStyle, true);
    assert.equal(config.region, 'us-east-1');
  });

  it('prefers the S3-specific endpoint variable, and honours AWS_REGION', () => {
    const config = s3ClientConfig({ AWS_ENDPOINT_URL: 'http://a:1', AWS_ENDPOINT_URL_S3: 'https://b:2', AWS_REGION: 'eu-west-3' });
    assert.equal(config.endpoint, 'https://b:2');
    assert.equal(config.region, 'eu-west-3');
  });

  it('talks to AWS itself with virtual-hosted addressing when no endpoint is set', () => {
    const config = s3ClientConfig({ AWS_DEFAULT_REGION: 'us-west-2' });
    assert.equal(config.endpoint, undefined);
    assert.equal(config.forcePathStyle, undefined);
    assert.equal(config.region, 'us-west-2');
  });

  it('asks for a region when there is neither a region nor an endpoint', () => {
    assert.throws(() => s3ClientConfig({}), { code: 'INVALID_ARGUMENTS', message: /set AWS_REGION/ });
  });

  it('refuses an endpoint that is not an http(s) URL', () => {
    assert.throws(() => s3ClientConfig({ AWS_ENDPOINT_URL: '127.0.0.1:9000' }), { code: 'INVALID_ARGUMENTS', message: /not an http\(s\) URL/ });
  });

  it('sends only the checksums an operation requires, unless the environment asks for more', () => {
    assert.equal(s3ClientConfig({ AWS_REGION: 'x' }).requestChecksumCalculation, 'WHEN_REQUIRED');
    assert.equal(s3ClientConfig({ AWS_REGION: 'x', AWS_REQUEST_CHECKSUM_CALCULATION: 'WHEN_SUPPORTED' }).requestChecksumCalculation, 'WHEN_SUPPORTED');
  });
});
