/** Bodies of POSTs to the MCP endpoint: each kind of bad input gets the JSON-RPC error the specification names. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { INVALID_REQUEST, PARSE_ERROR, parseJsonRpcBody } from '@airlock/mcp';

const codeOf = (contentType: string | undefined, text: string | undefined) => {
  const parsed = parseJsonRpcBody(contentType, text);
  return parsed.ok ? 'ok' : `${parsed.error.status} ${parsed.error.body.error.code}`;
};

describe('parseJsonRpcBody', () => {
  it('accepts requests, notifications, responses and batches', () => {
    assert.equal(codeOf('application/json', '{"jsonrpc":"2.0","id":1,"method":"ping"}'), 'ok');
    assert.equal(codeOf('application/json; charset=utf-8', '{"jsonrpc":"2.0","method":"notifications/initialized"}'), 'ok');
    assert.equal(codeOf('application/json', '{"jsonrpc":"2.0","id":3,"result":{}}'), 'ok');
    const batch = parseJsonRpcBody('application/json', '[{"jsonrpc":"2.0","id":1,"method":"ping"}]');
    assert.ok(batch.ok && Array.isArray(batch.messages) && batch.messages.length === 1);
  });

  it('answers text that is not JSON with -32700 (parse error), status 400, no id', () => {
    for (const text of ['{"jsonrpc": "2.0", "method": ', '', 'hello', undefined]) assert.equal(codeOf('application/json', text), `400 ${PARSE_ERROR}`, String(text));
    const parsed = parseJsonRpcBody('application/json', '{');
    assert.ok(!parsed.ok);
    assert.equal(parsed.error.body.id, null);
    assert.equal(parsed.error.body.jsonrpc, '2.0');
    assert.match(parsed.error.body.error.message, /^Parse error: the body is not valid JSON/);
  });

  it('answers JSON that is not a JSON-RPC message with -32600 (invalid request)', () => {
    for (const text of ['{}', '{"hello":"world"}', '{"jsonrpc":"1.0","id":1,"method":"ping"}', '{"jsonrpc":"2.0","id":1,"method":5}', '[]', '[{"jsonrpc":"2.0","id":1,"method":"ping"}, 3]', '42', 'null']) {
      assert.equal(codeOf('application/json', text), `400 ${INVALID_REQUEST}`, text);
    }
  });

  it('answers a message nested deeper than the limit with -32600, without overflowing the stack', () => {
    const deep = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}}`;
    const parsed = parseJsonRpcBody('application/json', deep);
    assert.ok(!parsed.ok);
    assert.equal(parsed.error.body.error.code, -32600);
    assert.match(parsed.error.body.error.message, /nests objects or arrays more than 72 deep/);
    assert.equal(codeOf('application/json', `{"jsonrpc":"2.0","id":1,"method":"x","params":${'{"a":'.repeat(60)}1${'}'.repeat(60)}}`), 'ok');
  });

  it('answers a body that is not sent as JSON with 415', () => {
    assert.equal(codeOf('text/plain', '{"jsonrpc":"2.0","id":1,"method":"ping"}'), '415 -32000');
    assert.equal(codeOf(undefined, '{}'), '415 -32000');
  });
});
