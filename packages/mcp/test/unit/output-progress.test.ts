/** A command's output as progress notifications: batched, increasing, cut when long, none after finish. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OutputProgress, type OutputProgressUpdate } from '@airlock/mcp';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('OutputProgress', () => {
  it('gathers output between notifications, with progress counting bytes so far', async () => {
    const sent: OutputProgressUpdate[] = [];
    const progress = new OutputProgress({ send: async (update) => void sent.push(update), intervalMs: 20 });
    progress.push(bytes('one\n'));
    progress.push(bytes('two\n'));
    await new Promise<void>((resolve) => {
      const check = setInterval(() => sent.length > 0 && (clearInterval(check), resolve()), 5);
    });
    progress.push(bytes('three\n'));
    await progress.finish();
    assert.deepEqual(sent, [
      { progress: 8, message: 'one\ntwo\n' },
      { progress: 14, message: 'three\n' },
    ]);
  });

  it('sends nothing after finish, and nothing for no output', async () => {
    const sent: OutputProgressUpdate[] = [];
    const progress = new OutputProgress({ send: async (update) => void sent.push(update), intervalMs: 1 });
    progress.push(new Uint8Array());
    await progress.finish();
    progress.push(bytes('late'));
    await progress.finish();
    assert.deepEqual(sent, []);
  });

  it('keeps the end of a long message and a character split across chunks whole', async () => {
    const sent: OutputProgressUpdate[] = [];
    const progress = new OutputProgress({ send: async (update) => void sent.push(update), intervalMs: 1000, maxMessageChars: 10 });
    const euro = bytes('€');
    progress.push(bytes('0123456789abcdef'));
    progress.push(euro.slice(0, 1));
    progress.push(euro.slice(1));
    await progress.finish();
    assert.equal(sent.length, 1);
    assert.equal(sent[0]?.message, '[… 7 characters of output not shown]\n789abcdef€');
    assert.equal(sent[0]?.progress, 19);
  });

  it('does not fail the call when the client cannot be told', async () => {
    const progress = new OutputProgress({ send: async () => Promise.reject(new Error('stream closed')), intervalMs: 1 });
    progress.push(bytes('x'));
    await progress.finish();
  });
});
