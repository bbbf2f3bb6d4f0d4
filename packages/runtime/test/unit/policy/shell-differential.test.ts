/**
 * The analysis against dash itself: each command runs under `strace -f -e
 * execve` in a temporary directory whose PATH holds only stubs (and the real
 * wrappers: env, xargs, nice, timeout, find, sh, bash), so nothing
 * destructive runs. When the analysis calls a command analysable, every
 * program dash (or a wrapper it started) executed must be among the programs
 * it listed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { analyzeCommand } from '../../../src/policy/shell-analysis.js';
import { CORPUS_PROGRAMS, generateCommands, ISSUE_22_COMMANDS, TRICKY_COMMANDS } from './shell-corpus.js';

const STRACE = '/usr/bin/strace';
const DASH = ['/usr/bin/dash', '/bin/dash'].find((path) => existsSync(path));
const TIMEOUT = ['/usr/bin/timeout', '/bin/timeout'].find((path) => existsSync(path));
const WRAPPERS = ['env', 'xargs', 'nice', 'timeout', 'nohup', 'find', 'setsid', 'stdbuf', 'bash', 'dash'];
/** Names the analysis must never miss, stubbed as well: bash keywords dash runs as commands, names of the corpus. */
const STUBS = [...CORPUS_PROGRAMS, 'echo', 'printf', '[[', ']]', 'coproc', 'function', 'select', 'a+=b', 'mapfile', 'let', 'sudo'];

function skipReason(): string | false {
  if (!existsSync(STRACE)) return 'strace is not installed (scripts/setup.sh installs it)';
  if (DASH === undefined) return 'dash is not installed';
  if (TIMEOUT === undefined) return 'timeout (coreutils) is not installed';
  const probe = spawnSync(STRACE, ['-qq', '-e', 'trace=execve', '-o', '/dev/null', DASH, '-c', ':'], { encoding: 'utf8' });
  if (probe.status !== 0) return `strace cannot trace here: ${probe.stderr.trim()}`;
  return false;
}

/** A directory of stubs and real wrappers, and an empty working directory with two files. */
function makeSandbox(): { root: string; bin: string; work: string } {
  const root = mkdtempSync(join(tmpdir(), 'airlock-shell-differential-'));
  const bin = join(root, 'bin');
  const work = join(root, 'work');
  mkdirSync(bin);
  mkdirSync(work);
  for (const stub of STUBS) {
    writeFileSync(join(bin, stub), '#!/bin/sh\nexit 1\n');
    chmodSync(join(bin, stub), 0o755);
  }
  for (const wrapper of WRAPPERS) {
    const real = [`/usr/bin/${wrapper}`, `/bin/${wrapper}`].find((path) => existsSync(path));
    if (real !== undefined) symlinkSync(real, join(bin, wrapper));
  }
  symlinkSync(DASH as string, join(bin, 'sh'));
  writeFileSync(join(work, 'F'), 'keep\n');
  writeFileSync(join(work, 'A=1'), '');
  return { root, bin, work };
}

/** Basenames of the programs dash and its children executed (attempts that failed excluded). */
function tracedPrograms(command: string, sandbox: { root: string; bin: string; work: string }): string[] {
  const trace = join(sandbox.root, 'trace');
  rmSync(trace, { force: true });
  // timeout kills its whole process group: a command that loops, or leaves a child behind, cannot outlive its run.
  spawnSync(
    STRACE,
    ['-f', '-qq', '-e', 'trace=execve', '-e', 'signal=none', '-o', trace, TIMEOUT as string, '-s', 'KILL', '10', DASH as string, '-c', command],
    {
      cwd: sandbox.work,
      env: { PATH: sandbox.bin },
      stdio: 'ignore',
      timeout: 30_000,
    },
  );
  const lines = existsSync(trace) ? readFileSync(trace, 'utf8').split('\n') : [];
  const programs: string[] = [];
  // The first two are timeout and dash themselves.
  let skip = 2;
  for (const line of lines) {
    const match = /execve\("((?:[^"\\]|\\.)*)"/.exec(line);
    if (match === null) continue;
    if (skip > 0) {
      skip--;
      continue;
    }
    if (/= -1 E/.test(line)) continue;
    programs.push(basename(JSON.parse(`"${match[1]}"`) as string));
  }
  return programs;
}

test('what dash runs is among the programs the analysis lists, whenever it calls a command analysable', { skip: skipReason() }, () => {
  const sandbox = makeSandbox();
  try {
    const corpus = [...ISSUE_22_COMMANDS, ...TRICKY_COMMANDS, ...generateCommands(400, 22)];
    const missed: string[] = [];
    let analysable = 0;
    let ran = 0;
    for (const command of corpus) {
      const analysis = analyzeCommand({ command });
      if (!analysis.analysable) continue;
      analysable++;
      const programs = tracedPrograms(command, sandbox);
      if (programs.length > 0) ran++;
      const unlisted = programs.filter((program) => !analysis.programs.includes(program));
      if (unlisted.length > 0) missed.push(`${JSON.stringify(command)}: ran ${unlisted.join(', ')}; listed ${analysis.programs.join(', ') || '(none)'}`);
    }
    assert.deepEqual(missed, [], `the analysis missed programs dash ran:\n${missed.join('\n')}`);
    // The corpus must exercise both answers, or the test proves nothing.
    assert.ok(analysable > 100 && analysable < corpus.length, `analysable: ${analysable} of ${corpus.length}`);
    assert.ok(ran > 50, `commands that ran a program: ${ran}`);
  } finally {
    rmSync(sandbox.root, { recursive: true, force: true });
  }
});
