/** The event store behind resumable MCP streams: ids that name their stream, replay after an id, and its bounds. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BoundedEventStore, DEFAULT_EVENT_RETENTION } from '@airlock/mcp';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

const note = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: n } });
const priming = {} as JSONRPCMessage;

async function replay(store: BoundedEventStore, after: string): Promise<{ stream: string; sent: [string, JSONRPCMessage][] }> {
  const sent: [string, JSONRPCMessage][] = [];
  const stream = await store.replayEventsAfter(after, { send: async (id, message) => void sent.push([id, message]) });
  return { stream, sent };
}

describe('BoundedEventStore', () => {
  it('replays what a stream sent after the given event, in order, without priming events or other streams', async () => {
    const store = new BoundedEventStore();
    const first = await store.storeEvent('call-a', priming);
    await store.storeEvent('call-b', note(100));
    const second = await store.storeEvent('call-a', note(1));
    await store.storeEvent('call-a', note(2));
    const result: JSONRPCMessage = { jsonrpc: '2.0', id: 7, result: {} };
    await store.storeEvent('call-a', result);
    assert.match(first, /^call-a\.\d+$/);
    assert.equal(await store.getStreamIdForEventId(second), 'call-a');
    const fromStart = await replay(store, first);
    assert.equal(fromStart.stream, 'call-a');
    assert.deepEqual(fromStart.sent.map(([, message]) => message), [note(1), note(2), result]);
    assert.deepEqual((await replay(store, second)).sent.map(([, message]) => message), [note(2), result]);
    assert.ok(fromStart.sent.every(([id]) => id.startsWith('call-a.')));
  });

  it('answers unknown or malformed ids with no stream, and refuses to replay them', async () => {
    const store = new BoundedEventStore();
    await store.storeEvent('call-a', note(1));
    for (const id of ['call-x.1', 'nonsense', 'call-a.', 'call-a.0', '.3']) {
      assert.equal(await store.getStreamIdForEventId(id), undefined, id);
      await assert.rejects(replay(store, id), /belongs to no stream/);
    }
  });

  it('drops the oldest events past the count, byte and age bounds, yet still resumes a remembered stream', async () => {
    let now = 0;
    const store = new BoundedEventStore({ ...DEFAULT_EVENT_RETENTION, maxEvents: 3, maxAgeMs: 1000 }, () => now);
    const primed = await store.storeEvent('long-call', priming);
    for (let n = 1; n <= 5; n += 1) await store.storeEvent('long-call', note(n));
    assert.equal(store.size, 3);
    // The priming event is gone, but its id still names the stream: the rest that is kept comes back.
    assert.deepEqual((await replay(store, primed)).sent.map(([, message]) => message), [note(3), note(4), note(5)]);
    now = 5000;
    const result: JSONRPCMessage = { jsonrpc: '2.0', id: 1, result: {} };
    await store.storeEvent('long-call', result);
    assert.equal(store.size, 1, 'events older than maxAgeMs were dropped');
    assert.deepEqual((await replay(store, primed)).sent.map(([, message]) => message), [result]);

    const small = new BoundedEventStore({ ...DEFAULT_EVENT_RETENTION, maxBytes: 200 });
    for (let n = 0; n < 20; n += 1) await small.storeEvent('s', note(n));
    assert.ok(small.size < 20 && small.size >= 1, `kept ${small.size}`);
  });

  it('remembers only the most recently written streams', async () => {
    const store = new BoundedEventStore({ ...DEFAULT_EVENT_RETENTION, maxStreams: 2 });
    const a = await store.storeEvent('a', note(1));
    const b = await store.storeEvent('b', note(1));
    await store.storeEvent('a', note(2));
    await store.storeEvent('c', note(1));
    assert.equal(await store.getStreamIdForEventId(a), 'a');
    assert.equal(await store.getStreamIdForEventId(b), undefined);
  });

  it('does not send events stored while it replays twice', async () => {
    const store = new BoundedEventStore();
    const first = await store.storeEvent('s', note(1));
    await store.storeEvent('s', note(2));
    const sent: JSONRPCMessage[] = [];
    await store.replayEventsAfter(first, {
      send: async (_id, message) => {
        sent.push(message);
        await store.storeEvent('s', note(99));
      },
    });
    assert.deepEqual(sent, [note(2)]);
  });
});
