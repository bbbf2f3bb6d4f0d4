/**
 * The agent's outgoing frames when its buffer moves the unsent bytes while a
 * frame is built (a partial send under backpressure, then a frame that makes
 * the buffer grow): the frame's length must land in its own header. Before the
 * fix the host read a length of 0 and dropped the connection ("frame length 0
 * is outside 8..1048584"), seen with a live desktop view streaming. The check
 * is C (agent/test/frame-buffer-check.c) compiled with the agent's buffer.c.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';

const agentDir = resolve(dirname(fileURLToPath(import.meta.url)), '../../../../agent');
const compiler = spawnSync('sh', ['-c', 'command -v "${CC:-gcc}"'], { encoding: 'utf8' }).stdout.trim();

it('keeps a frame length in its own header when the buffer moves its unsent bytes mid-frame', { skip: compiler ? false : 'no C compiler (scripts/setup.sh installs gcc)' }, () => {
  const work = mkdtempSync(join(tmpdir(), 'airlock-frame-buffer-'));
  try {
    const binary = join(work, 'frame-buffer-check');
    const built = spawnSync(compiler, ['-O2', '-Wall', '-o', binary, join(agentDir, 'test/frame-buffer-check.c'), join(agentDir, 'src/buffer.c')], { encoding: 'utf8' });
    assert.equal(built.status, 0, built.stderr);
    const ran = spawnSync(binary, { encoding: 'utf8' });
    assert.equal(ran.stdout.trim(), 'ok', ran.stdout + ran.stderr);
    assert.equal(ran.status, 0);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
