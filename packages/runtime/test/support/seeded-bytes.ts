/**
 * Random-looking bytes that are the same on every run (AES-128-CTR of zeros
 * under a key derived from a seed): tests whose outcome depends on where
 * content-defined boundaries fall then give one answer, not a distribution.
 */
import { createCipheriv, createHash } from 'node:crypto';

/** `length` bytes determined by `seed`. */
export function seededBytes(seed: string, length: number): Buffer {
  const key = createHash('sha256').update(seed).digest().subarray(0, 16);
  const cipher = createCipheriv('aes-128-ctr', key, Buffer.alloc(16));
  return Buffer.concat([cipher.update(Buffer.alloc(length)), cipher.final()]);
}
