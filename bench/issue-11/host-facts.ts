/** Facts about the host a run was measured on, written beside its figures. */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg, release, totalmem } from 'node:os';

/** Cores, kernel, runsc version, git commit, memory and load. */
export interface HostFacts {
  cores: number;
  cpuModel: string;
  kernel: string;
  runsc: string;
  gitCommit: string;
  gitBranch: string;
  memoryMb: number;
  loadAverage: number[];
}

function output(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  } catch {
    return 'unknown';
  }
}

/** The facts now. */
export function hostFacts(): HostFacts {
  return {
    cores: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    kernel: release(),
    runsc: output('runsc', ['--version']).split('\n')[0] ?? 'unknown',
    gitCommit: output('git', ['rev-parse', 'HEAD']),
    gitBranch: output('git', ['rev-parse', '--abbrev-ref', 'HEAD']),
    memoryMb: Math.round(totalmem() / 2 ** 20),
    loadAverage: loadavg().map((value) => Math.round(value * 100) / 100),
  };
}
