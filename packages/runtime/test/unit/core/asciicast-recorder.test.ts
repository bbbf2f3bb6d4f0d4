/**
 * The asciicast v2 writer of takeover recordings: the header, events in
 * order, a UTF-8 character split between two chunks written whole, and the
 * bound (the recording stops, says so, and reports truncated).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AsciicastRecorder } from '../../../src/core/asciicast-recorder.js';
import type { RecordingSink } from '../../../src/core/terminal-recordings.js';

/** A sink in memory. */
function memorySink(): RecordingSink & { text(): string; closed: boolean } {
  let text = '';
  const sink = {
    closed: false,
    append(chunk: string) {
      text += chunk;
    },
    async close() {
      sink.closed = true;
      return { bytes: Buffer.byteLength(text), sha256: 'not computed here' };
    },
    text: () => text,
  };
  return sink;
}

const HEADER = { columns: 100, rows: 30, startedAt: new Date('2026-12-01T10:00:00Z'), title: 'takeover', env: { TERM: 'xterm-256color' } };

describe('AsciicastRecorder', () => {
  it('writes the header, then output, input and resize events in order', async () => {
    const sink = memorySink();
    const recorder = new AsciicastRecorder(sink, HEADER);
    recorder.output(Buffer.from('$ '));
    recorder.input(Buffer.from('ls\r'));
    recorder.resize(120, 40);
    recorder.output(Buffer.from('a b\r\n'));
    const written = await recorder.finish();
    assert.equal(sink.closed, true);
    assert.equal(written.bytes, Buffer.byteLength(sink.text()));
    const [header, ...events] = sink
      .text()
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as unknown);
    assert.deepEqual(header, { version: 2, width: 100, height: 30, timestamp: 1_796_119_200, title: 'takeover', env: { TERM: 'xterm-256color' } });
    assert.deepEqual(
      events.map((event) => (event as unknown[]).slice(1)),
      [
        ['o', '$ '],
        ['i', 'ls\r'],
        ['r', '120x40'],
        ['o', 'a b\r\n'],
      ],
    );
    for (const event of events) assert.equal(typeof (event as unknown[])[0], 'number');
  });

  it('writes a character split between two chunks whole', async () => {
    const sink = memorySink();
    const recorder = new AsciicastRecorder(sink, HEADER);
    const bytes = Buffer.from('é€', 'utf8');
    recorder.output(bytes.subarray(0, 1));
    recorder.output(bytes.subarray(1, 3));
    recorder.output(bytes.subarray(3));
    await recorder.finish();
    const output = sink
      .text()
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((line) => (JSON.parse(line) as [number, string, string])[2])
      .join('');
    assert.equal(output, 'é€');
  });

  it('stops at its bound, says so in the recording, and reports truncated', async () => {
    const sink = memorySink();
    const recorder = new AsciicastRecorder(sink, HEADER, 600);
    for (let index = 0; index < 50; index++) recorder.output(Buffer.from(`line ${index}\r\n`));
    await recorder.finish();
    assert.equal(recorder.truncated, true);
    const lines = sink.text().trimEnd().split('\n');
    assert.match(lines.at(-1) ?? '', /the recording stopped at its bound of 600 bytes/);
    assert.ok(lines.length < 51, 'events past the bound were dropped');
    assert.ok(Buffer.byteLength(lines.slice(0, -1).join('\n')) + 1 <= 600, 'what precedes the notice fits the bound');
    for (const line of lines) JSON.parse(line);
  });
});
