/** A deadline for a promise. */
import type { AirlockError } from '../../core/errors.js';

/** Races `promise` against a timer; on timeout rejects with what `onTimeout` returns. */
export function withTimeout<T>(promise: Promise<T>, timeoutMs: number, onTimeout: () => AirlockError): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(onTimeout()), timeoutMs);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
