/** Printing helpers of the CLI: JSON when asked, short tables otherwise, errors with their code. */
import { AirlockApiError, AirlockConnectionError } from '@airlock/sdk';

/** Exit code of a call refused by policy, a human or a guard (like a shell's "cannot execute"). */
export const EXIT_REFUSED = 126;
/** Exit code of other failures. */
export const EXIT_FAILURE = 1;
/** Exit code of bad command-line usage. */
export const EXIT_USAGE = 2;

/** Codes of errors found locally (flags, keys, store URLs) that exit like bad usage: the user changes a setting. */
const LOCAL_USAGE_CODES = new Set(['INVALID_ARGUMENTS', 'INVALID_CONFIGURATION']);

const REFUSAL_CODES = new Set(['POLICY_DENIED', 'FILE_ACCESS_DENIED', 'APPROVAL_PENDING', 'APPROVAL_DENIED', 'APPROVAL_EXPIRED', 'RUNAWAY_DETECTED', 'BUDGET_EXCEEDED']);

/** Prints a value as JSON. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Prints rows as an aligned table. */
export function printTable(headers: string[], rows: string[][]): void {
  const widths = headers.map((header, index) => Math.max(header.length, ...rows.map((row) => (row[index] ?? '').length)));
  const line = (cells: string[]) => cells.map((cell, index) => cell.padEnd(widths[index] ?? 0)).join('  ').trimEnd();
  process.stdout.write(`${line(headers)}\n`);
  for (const row of rows) process.stdout.write(`${line(row)}\n`);
}

/** Prints an error as `airlock: CODE: message` and returns the exit code it maps to. */
export function reportError(error: unknown): number {
  if (error instanceof AirlockApiError) {
    process.stderr.write(`airlock: ${error.code}: ${error.message}\n`);
    const decision = error.details['decision'] as { policyIds?: string[] } | undefined;
    if (decision?.policyIds && decision.policyIds.length > 0) process.stderr.write(`airlock: policies: ${decision.policyIds.join(', ')}\n`);
    return REFUSAL_CODES.has(error.code) ? EXIT_REFUSED : EXIT_FAILURE;
  }
  if (error instanceof AirlockConnectionError) {
    process.stderr.write(`airlock: ${error.message}\n`);
    return EXIT_FAILURE;
  }
  const code = (error as { code?: string }).code;
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`airlock: ${code ? `${code}: ` : ''}${message}\n`);
  // Found here, before any server answered: a flag or a setting of this installation to change.
  return code !== undefined && LOCAL_USAGE_CODES.has(code) ? EXIT_USAGE : EXIT_FAILURE;
}
