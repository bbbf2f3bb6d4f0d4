import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { AgentEndpoint, agentDirectoryOf } from '../../../src/drivers/gvisor/agent-endpoint.js';

describe('AgentEndpoint socket path', () => {
  it('listens in a state dir whose socket path is longer than a Unix socket path may be', async () => {
    const root = mkdtempSync('/tmp/airlock-endpoint-');
    // A data dir deep enough that <state dir>/agent/agent.sock passes 107 bytes (a per-call sandbox's id is long).
    const stateDir = join(root, 'a-data-directory-with-a-long-name', 'sandboxes', 'airlock-ses_0123456789abcdef-run-0123456789');
    mkdirSync(agentDirectoryOf(stateDir), { recursive: true });
    const endpoint = new AgentEndpoint(stateDir, 'long-path-sandbox');
    try {
      assert.ok(Buffer.byteLength(endpoint.socketPath) > 107, `the path is ${Buffer.byteLength(endpoint.socketPath)} bytes`);
      await endpoint.listen();
      assert.ok(statSync(endpoint.socketPath).isSocket(), 'the socket file is where the sandbox expects it');
      // Something connecting by the file (as the agent does through its bind mount) reaches the listener.
      const directory = await open(agentDirectoryOf(stateDir), 'r');
      try {
        await new Promise<void>((resolve, reject) => {
          const socket = connect(`/proc/self/fd/${directory.fd}/agent.sock`, () => {
            socket.destroy();
            resolve();
          });
          socket.once('error', reject);
        });
      } finally {
        await directory.close();
      }
    } finally {
      await endpoint.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
