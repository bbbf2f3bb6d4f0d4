/**
 * File operations through the real agent binary on the host, confined to a
 * temp root: every operation, and the hostile paths (symlinks out of the
 * root, "..", a symlink swapped in during the call, planted temp names,
 * long names, 2,040 components) that must end in a clear error or inside
 * the root, never outside it.
 */
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AgentFiles } from '../../../src/drivers/agent/agent-files.js';
import { MessageType, Tag } from '../../../src/drivers/agent/agent-protocol.js';
import { FieldWriter } from '../../../src/drivers/agent/frame-codec.js';
import { startHostAgent, type HostAgent } from '../../support/host-agent.js';

describe('agent on the host: files', () => {
  let agent: HostAgent;
  let outside: string;
  const files = new AgentFiles();
  const inRoot = (path: string): string => join(agent.root, path);

  before(async () => {
    agent = await startHostAgent();
    // A directory next to the root that must never be touched through the agent.
    outside = mkdtempSync(join(tmpdir(), 'airlock-agent-outside-'));
    writeFileSync(join(outside, 'secret'), 'host secret');
  });
  after(async () => {
    await agent.dispose();
    rmSync(outside, { recursive: true, force: true });
  });

  it('writes, reads (with offset and limit), stats, lists, renames and removes', async () => {
    const c = agent.connection;
    await files.write(c, '/w/a/b.txt', Buffer.from('0123456789'), { createParents: true });
    assert.equal(readFileSync(inRoot('w/a/b.txt'), 'utf8'), '0123456789');
    assert.deepEqual(await files.read(c, '/w/a/b.txt', { maxBytes: 4, offset: 3 }), { content: Buffer.from('3456'), size: 10, truncated: true });
    assert.equal((await files.read(c, '/w/a/b.txt', { maxBytes: 100 })).truncated, false);
    const info = await files.stat(c, '/w/a/b.txt');
    assert.deepEqual([info.name, info.path, info.type, info.size, info.mode], ['b.txt', '/w/a/b.txt', 'file', 10, '0644']);
    writeFileSync(inRoot('w/a/run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    await files.write(c, '/w/a/run.sh', Buffer.from('#!/bin/sh\necho new\n'), { createParents: false });
    assert.equal(lstatSync(inRoot('w/a/run.sh')).mode & 0o777, 0o755, 'a replaced file keeps its mode');
    symlinkSync('b.txt', inRoot('w/a/link'));
    const listed = await files.list(c, '/w/a');
    assert.deepEqual(listed.map((entry) => [entry.name, entry.type]), [['b.txt', 'file'], ['link', 'symlink'], ['run.sh', 'file']]);
    assert.equal(listed.find((entry) => entry.name === 'link')?.target, 'b.txt');
    assert.deepEqual(await files.mkdir(c, '/w/new/deep'), { created: true });
    assert.deepEqual(await files.mkdir(c, '/w/new/deep'), { created: false });
    await files.rename(c, '/w/a/b.txt', '/w/new/deep/c.txt');
    assert.equal(readFileSync(inRoot('w/new/deep/c.txt'), 'utf8'), '0123456789');
    writeFileSync(inRoot('w/taken'), 'x');
    await assert.rejects(files.rename(c, '/w/new/deep/c.txt', '/w/taken', { noReplace: true }), { code: 'FILE_EXISTS' });
    await files.remove(c, '/w/a/link', { recursive: false });
    assert.ok(existsSync(inRoot('w/a/run.sh')), 'removing a link leaves its target');
    await files.remove(c, '/w', { recursive: true });
    assert.ok(!existsSync(inRoot('w')));
  });

  it('answers every error with its own code', async () => {
    const c = agent.connection;
    mkdirSync(inRoot('e/dir'), { recursive: true });
    writeFileSync(inRoot('e/file'), 'x');
    await assert.rejects(files.read(c, '/e/none', { maxBytes: 1 }), { code: 'FILE_NOT_FOUND' });
    await assert.rejects(files.read(c, '/e/dir', { maxBytes: 1 }), { code: 'IS_A_DIRECTORY' });
    await assert.rejects(files.list(c, '/e/file'), { code: 'NOT_A_DIRECTORY' });
    await assert.rejects(files.write(c, '/e/file/x', Buffer.from('x'), { createParents: false }), { code: 'NOT_A_DIRECTORY' });
    await assert.rejects(files.write(c, '/e/missing/x', Buffer.from('x'), { createParents: false }), { code: 'FILE_NOT_FOUND' });
    await assert.rejects(files.write(c, '/e/dir', Buffer.from('x'), { createParents: false }), { code: 'IS_A_DIRECTORY' });
    await assert.rejects(files.mkdir(c, '/e/file'), { code: 'FILE_EXISTS' });
    await assert.rejects(files.remove(c, '/e/dir', { recursive: false }), { code: 'IS_A_DIRECTORY' });
    await assert.rejects(files.remove(c, '/', { recursive: true }), { code: 'INVALID_ARGUMENTS' });
    await assert.rejects(files.read(c, 'relative', { maxBytes: 1 }), { code: 'INVALID_ARGUMENTS' });
  });

  it('keeps absolute and relative symlinks and ".." inside the root', async () => {
    const c = agent.connection;
    mkdirSync(inRoot('s'), { recursive: true });
    symlinkSync(join(outside, 'secret'), inRoot('s/absolute'));
    symlinkSync('../../../../../../../../..' + outside, inRoot('s/relative'));
    symlinkSync('/', inRoot('s/root'));
    await assert.rejects(files.read(c, '/s/absolute', { maxBytes: 100 }), { code: 'FILE_NOT_FOUND' }, 'an absolute link restarts at the root');
    await assert.rejects(files.read(c, '/s/relative/secret', { maxBytes: 100 }), { code: 'FILE_NOT_FOUND' }, '.. stops at the root');
    await assert.rejects(files.read(c, `/../../../..${outside}/secret`, { maxBytes: 100 }), { code: 'FILE_NOT_FOUND' });
    assert.equal(await files.canonical(c, '/s/root/s/relative/x', { followLast: true }), `${outside}/x`, 'resolved as a path of the root');
    await files.write(c, '/s/absolute', Buffer.from('replaced'), { createParents: false });
    assert.equal(readFileSync(join(outside, 'secret'), 'utf8'), 'host secret', 'a write replaces the link, never its target');
    assert.equal(lstatSync(inRoot('s/absolute')).isFile(), true);
    // A link loop and a chain longer than 40 hops are clear errors.
    symlinkSync('loop-b', inRoot('s/loop-a'));
    symlinkSync('loop-a', inRoot('s/loop-b'));
    await assert.rejects(files.read(c, '/s/loop-a', { maxBytes: 1 }), (error: { code: string; message: string }) => error.code === 'INVALID_ARGUMENTS' && /40 symbolic links/.test(error.message));
    // The host's own files are not there, whatever the path.
    await assert.rejects(files.read(c, '/etc/hostname', { maxBytes: 100 }), { code: 'FILE_NOT_FOUND' });
  });

  it('refuses a symlink anywhere on a canonical path when told to (FILE_CHANGED), for every operation', async () => {
    const c = agent.connection;
    mkdirSync(inRoot('r/real'), { recursive: true });
    writeFileSync(inRoot('r/real/f'), 'data');
    symlinkSync('real', inRoot('r/swapped'));
    const refuse = { symlinks: 'refuse' as const };
    await assert.rejects(files.read(c, '/r/swapped/f', { maxBytes: 10, ...refuse }), { code: 'FILE_CHANGED' });
    await assert.rejects(files.write(c, '/r/swapped/g', Buffer.from('x'), { createParents: false, ...refuse }), { code: 'FILE_CHANGED' });
    await assert.rejects(files.list(c, '/r/swapped', refuse), { code: 'FILE_CHANGED' });
    await assert.rejects(files.remove(c, '/r/swapped/f', { recursive: false, ...refuse }), { code: 'FILE_CHANGED' });
    await assert.rejects(files.stat(c, '/r/swapped/f', refuse), { code: 'FILE_CHANGED' });
    assert.equal((await files.read(c, '/r/real/f', { maxBytes: 10, ...refuse })).content.toString(), 'data');
    assert.ok(!existsSync(inRoot('r/real/g')));
  });

  it('never writes through a directory swapped for a symlink during the calls', async () => {
    const c = agent.connection;
    mkdirSync(inRoot('race/allowed'), { recursive: true });
    const victim = mkdtempSync(join(tmpdir(), 'airlock-agent-victim-'));
    let swapping = true;
    // Swaps race/allowed between a real directory and a symlink to the victim, as fast as it can.
    const swapper = (async () => {
      let flips = 0;
      while (swapping) {
        try {
          renameSync(inRoot('race/allowed'), inRoot('race/parked'));
          symlinkSync(victim, inRoot('race/allowed'));
          await new Promise((resolve) => setImmediate(resolve));
          rmSync(inRoot('race/allowed'));
          renameSync(inRoot('race/parked'), inRoot('race/allowed'));
          flips++;
        } catch {
          // a write may hold the name for a moment
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
      return flips;
    })();
    const outcomes: string[] = [];
    for (let i = 0; i < 60; i++) {
      outcomes.push(
        await files.write(c, `/race/allowed/f${i}`, Buffer.from('payload'), { createParents: false, symlinks: 'refuse' }).then(
          () => 'written',
          (error: { code: string }) => error.code,
        ),
      );
    }
    swapping = false;
    const flips = await swapper;
    try {
      assert.deepEqual(readdirSync(victim), [], 'a write went through the symlink');
      assert.ok(flips > 10, `the swapper flipped only ${flips} times`);
      assert.ok(outcomes.every((code) => ['written', 'FILE_CHANGED', 'FILE_NOT_FOUND'].includes(code)), outcomes.join(','));
    } finally {
      rmSync(victim, { recursive: true, force: true });
    }
  });

  it('is not redirected by 3,000 planted temp-file symlinks', async () => {
    const c = agent.connection;
    mkdirSync(inRoot('plant'), { recursive: true });
    const victim = join(outside, 'victim');
    writeFileSync(victim, 'untouched');
    for (let pid = 1; pid <= 3000; pid++) symlinkSync(victim, inRoot(`plant/.airlock-write.${pid}`));
    for (const guess of ['.airlock-', '.airlock-00000000000000000000000000000000', '.airlock-ffffffffffffffffffffffffffffffff']) symlinkSync(victim, inRoot(`plant/${guess}`));
    await files.write(c, '/plant/target', Buffer.from('written'), { createParents: false });
    assert.equal(readFileSync(victim, 'utf8'), 'untouched');
    assert.equal(readFileSync(inRoot('plant/target'), 'utf8'), 'written');
    assert.equal(readdirSync(inRoot('plant')).filter((name) => !name.startsWith('.airlock-write.')).length, 4, 'no temp file left behind');
  });

  it('answers long names, long paths and 2,040 components with INVALID_ARGUMENTS, and survives them', async () => {
    const c = agent.connection;
    await assert.rejects(files.write(c, `/${'n'.repeat(300)}`, Buffer.from('x'), { createParents: false }), { code: 'INVALID_ARGUMENTS' });
    await assert.rejects(files.read(c, `/${'a/'.repeat(2040)}f`, { maxBytes: 1 }), { code: 'INVALID_ARGUMENTS' });
    // The same requests sent raw, past the host's own checks: the agent refuses them itself.
    for (const path of [`/${'n'.repeat(300)}`, `/${'a/'.repeat(2040)}f`, `/${'x'.repeat(5000)}`, 'not-absolute']) {
      const stream = c.request(MessageType.READ, new FieldWriter().string(Tag.PATH, path).int(Tag.LIMIT, 1).finish(), { operation: 'reading', path });
      await assert.rejects(stream.done, { code: 'INVALID_ARGUMENTS' });
    }
    // A deep tree the agent may create (300 levels), then refuses to remove in one call past its depth limit.
    const deep = `/${'d/'.repeat(300)}f`;
    await files.write(c, deep, Buffer.from('deep'), { createParents: true });
    await assert.rejects(files.remove(c, '/d', { recursive: true }), { code: 'INVALID_ARGUMENTS' });
    assert.equal((await c.ping(2_000)).children, 0, 'the agent still answers');
  });
});
