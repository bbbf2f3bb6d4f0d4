import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FileOperations } from '../../../src/core/file-operations.js';
import { OutputCollector, encodeOutput } from '../../../src/core/output-collector.js';

describe('lexical paths', () => {
  const cases: [string, string][] = [
    ['notes.txt', '/workspace/notes.txt'],
    ['/workspace/../etc/passwd', '/etc/passwd'],
    ['../../../../etc/shadow', '/etc/shadow'],
    ['/a/./b//c/', '/a/b/c'],
    ['/..', '/'],
    ['./x/../y', '/workspace/y'],
  ];
  for (const [input, expected] of cases) it(`${input} → ${expected}`, () => assert.equal(FileOperations.lexical(input), expected));
  it('refuses NUL bytes', () => assert.throws(() => FileOperations.lexical('/a\0b'), { code: 'INVALID_ARGUMENTS' }));
});

describe('output checks', () => {
  it('keeps the first bytes up to the limit and flags truncation', () => {
    const collector = new OutputCollector(10);
    collector.push(Buffer.from('hello '));
    collector.push(Buffer.from('world, and more'));
    assert.equal(collector.bytes().toString(), 'hello worl');
    assert.equal(collector.truncated, true);
    assert.equal(collector.total, 21);
  });
  it('drops a multi-byte character cut by the limit instead of switching to base64', () => {
    const text = Buffer.from('aé'); // 'é' is two bytes
    assert.deepEqual(encodeOutput(text.subarray(0, 2), true), { data: 'a', encoding: 'utf8' });
  });
  it('returns invalid UTF-8 as base64', () => {
    const bytes = Buffer.from([0xff, 0xfe, 0x00, 0x41]);
    assert.deepEqual(encodeOutput(bytes, false), { data: bytes.toString('base64'), encoding: 'base64' });
  });
});
