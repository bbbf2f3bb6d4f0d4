/**
 * Turns debootstrap's `I:` lines into progress reports. debootstrap does not
 * say how many packages it will fetch, so the fraction inside a phase is a
 * count against the usual size of the package set (about 110 for minbase +
 * python3): rough, monotonic, and capped before the next phase starts.
 */
import type { ImageProgress } from '../core/image-catalog.js';

interface Phase {
  /** the debootstrap line prefix that marks a step of this phase */
  prefix: RegExp;
  phase: string;
  start: number;
  end: number;
}

/** Where each phase sits in the whole build (0..1); the part after debootstrap is the builder's. */
const PHASES: readonly Phase[] = [
  { prefix: /^I: (?:Retrieving (?:InRelease|Release|Packages)|Checking|Valid Release|Resolving|Target|Chosen|Validating Packages)/, phase: 'resolve', start: 0, end: 0.04 },
  { prefix: /^I: (?:Retrieving|Validating) /, phase: 'download', start: 0.04, end: 0.35 },
  { prefix: /^I: Extracting /, phase: 'extract', start: 0.35, end: 0.45 },
  { prefix: /^I: (?:Installing|Unpacking) /, phase: 'unpack', start: 0.45, end: 0.65 },
  { prefix: /^I: Configuring /, phase: 'configure', start: 0.65, end: 0.88 },
  { prefix: /^I: Base system installed/, phase: 'configure', start: 0.88, end: 0.88 },
];

/** Maps debootstrap output lines to `ImageProgress`; one instance per run. */
export class DebootstrapProgress {
  private readonly counts = new Map<string, number>();
  private fraction = 0;

  /** @param expectedPackages how many packages a run usually handles (sets the pace inside a phase) */
  constructor(private readonly expectedPackages = 110) {}

  /** The progress a line stands for, or undefined for lines that are not progress (warnings, blank). */
  line(text: string): ImageProgress | undefined {
    const trimmed = text.trim();
    const phase = PHASES.find((candidate) => candidate.prefix.test(trimmed));
    if (phase === undefined) return undefined;
    // download sees two lines per package (Retrieving + Validating)
    const perPackage = phase.phase === 'download' ? 2 : 1;
    const count = (this.counts.get(phase.phase) ?? 0) + 1;
    this.counts.set(phase.phase, count);
    const within = Math.min(count / (this.expectedPackages * perPackage), 1);
    this.fraction = Math.max(this.fraction, phase.start + (phase.end - phase.start) * within);
    return { phase: phase.phase, message: trimmed.slice(3), fraction: Number(this.fraction.toFixed(3)) };
  }
}
