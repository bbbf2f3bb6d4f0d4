/**
 * The errors the image code raises, in one place so that every "the archive
 * is bad" message carries the same fix and every full disk becomes DISK_FULL.
 */
import { AirlockError, isAirlockError } from '../core/errors.js';

/** The fix for every unusable image archive. */
export const REEXPORT_HINT =
  'Re-export it with `docker save IMAGE -o file.tar` or `skopeo copy docker://IMAGE oci-archive:file.tar`';

/** An INVALID_IMAGE error for a problem found inside an image archive; the importer adds the archive path. */
export function imageProblem(problem: string, details: Record<string, unknown> = {}): AirlockError {
  return new AirlockError('INVALID_IMAGE', `${problem}. ${REEXPORT_HINT}.`, { details: { ...details, problem } });
}

/** The `problem` text of an error made by `imageProblem`, if it is one. */
export function problemOf(error: unknown): string | undefined {
  if (!isAirlockError(error, 'INVALID_IMAGE')) return undefined;
  const problem = error.details['problem'];
  return typeof problem === 'string' ? problem : undefined;
}

/** The errno-style code of a Node error (`ENOENT`, `ENOSPC`, ...), if any. */
export function errnoCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  const code = (error as { code: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/** True when `error` says the disk or quota is full: an ENOSPC/EDQUOT errno, or a child process (tar) that printed so. */
export function isNoSpace(error: unknown): boolean {
  const code = errnoCode(error);
  if (code === 'ENOSPC' || code === 'EDQUOT') return true;
  const text = `${(error as { message?: unknown } | null)?.message ?? ''} ${(error as { stderr?: unknown } | null)?.stderr ?? ''}`;
  return /No space left on device|Disk quota exceeded/.test(text);
}

/**
 * Turns anything thrown while building or importing into an AirlockError:
 * a full disk or quota becomes DISK_FULL (naming `where`), AirlockErrors pass
 * through, the rest becomes INTERNAL with the original as cause.
 */
export function toImageError(error: unknown, where: string): AirlockError {
  if (error instanceof AirlockError) return error;
  if (isNoSpace(error)) {
    return new AirlockError(
      'DISK_FULL',
      `No space left on the disk holding ${where}. Free some space (for example remove unused images with \`airlock images rm NAME\`) and retry.`,
      { cause: error, details: { where } },
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return new AirlockError('INTERNAL', `Image operation failed in ${where}: ${message}`, { cause: error });
}
