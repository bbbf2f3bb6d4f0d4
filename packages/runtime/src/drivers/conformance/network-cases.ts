/**
 * Conformance case for networking: a sandbox whose spec has a network
 * reaches the gateway address on its allowed ports and nothing else, and
 * sees the network's files read-only at their paths. The "gateway" here is
 * a TCP server of the test on the gateway address, which the driver puts on
 * the host side of the sandbox's link; the subnet comes from the context
 * (test-made namespaces only).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import type { SandboxNetwork } from '../../core/sandbox-driver.js';
import { sh, skipWithoutCommands, withSandbox, type ConformanceContext } from './conformance-context.js';

/** Registers the networking case. */
export function networkCases(getContext: () => ConformanceContext): void {
  describe('network', () => {
    it('reaches the gateway on its allowed ports only, sees the network files read-only, and keeps its network across a restore', async (t: TestContext) => {
      const context = getContext();
      if (skipWithoutCommands(context, t)) return;
      if (!context.driver.capabilities.network) return t.skip('driver declares no network capability');
      if (!context.networkSubnet) return t.skip('the test context offers no subnet for sandbox networks');
      const { driver } = context;
      const { gateway, pool, prefixLength } = splitSubnet(context.networkSubnet);
      const allowed = 40_000 + Math.floor(Math.random() * 10_000);
      const denied = allowed + 1;
      const dir = await mkdtemp(join(tmpdir(), 'airlock-network-case-'));
      const servers: Server[] = [];
      const connections = new Set<Socket>();
      try {
        await writeFile(join(dir, 'hostname'), 'from-the-network-files\n');
        const network: SandboxNetwork = {
          gatewayAddress: gateway,
          addressPool: pool,
          prefixLength,
          gatewayPorts: { tcp: [allowed], udp: [] },
          files: [{ hostPath: join(dir, 'hostname'), sandboxPath: '/etc/hostname' }],
        };
        await withSandbox(context, { network }, async (handle, spec) => {
          // The gateway address exists on the host once the sandbox's link does.
          for (const port of [allowed, denied]) servers.push(await listen(gateway, port, `gateway-${port}`, connections));
          // stdin stays open until the gateway has closed: a sandbox that closes first keeps the connection in
          // TIME_WAIT for a minute, and gVisor cannot checkpoint a sandbox holding one (measured).
          const reached = await sh(driver, handle, `sleep 2 | nc -w 10 ${gateway} ${allowed}`, { timeoutMs: 60_000 });
          assert.equal(reached.stdout, `gateway-${allowed}`, `the allowed port was not reached: ${reached.stderr}`);
          const refused = await sh(driver, handle, `nc -w 5 ${gateway} ${denied} </dev/null`, { timeoutMs: 60_000 });
          assert.notEqual(refused.stdout, `gateway-${denied}`, 'a port outside gatewayPorts was reached');
          assert.notEqual(refused.exitCode, 0);
          const loopback = await sh(driver, handle, `nc -w 5 127.0.0.1 ${allowed} </dev/null`, { timeoutMs: 60_000 });
          assert.notEqual(loopback.stdout, `gateway-${allowed}`, "the sandbox's loopback reached the host's");
          const file = await sh(driver, handle, 'cat /etc/hostname; echo changed > /etc/hostname && echo WRITABLE', { timeoutMs: 30_000 });
          assert.equal(file.stdout.split('\n')[0], 'from-the-network-files');
          assert.doesNotMatch(file.stdout, /WRITABLE/, 'a network file is writable in the sandbox');
          if (driver.capabilities.snapshot) {
            // A restore gets a new namespace (and maybe a new address): the machine must follow it. First the
            // gateway resets its connections, as the control plane's quiesce does (gVisor cannot save one).
            for (const socket of connections) socket.resetAndDestroy();
            const image = await context.newImageDir();
            await checkpointWhenQuiet(() => driver.checkpoint(handle, image, { leaveRunning: false }));
            const restored = await driver.restore(await context.newSpec({ sameDiskAs: spec, network }), image);
            try {
              const again = await sh(driver, restored, `nc -w 10 ${gateway} ${allowed} </dev/null`, { timeoutMs: 60_000 });
              assert.equal(again.stdout, `gateway-${allowed}`, `after a restore the allowed port was not reached: ${again.stderr}`);
            } finally {
              await driver.destroy(restored);
            }
          }
        });
      } finally {
        for (const server of servers) await new Promise((resolve) => server.close(resolve));
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
}

/** The first address of the subnet as gateway, its upper half as the sandbox pool. */
function splitSubnet(subnet: string): { gateway: string; pool: string; prefixLength: number } {
  const match = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(subnet);
  assert.ok(match, `networkSubnet ${subnet} is not an IPv4 CIDR`);
  const prefixLength = Number(match[5]);
  const base = match.slice(1, 5).reduce((sum, part) => sum * 256 + Number(part), 0);
  const start = base - (base % 2 ** (32 - prefixLength));
  const address = (value: number): string => [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
  return { gateway: address(start + 1), pool: `${address(start + 2 ** (31 - prefixLength))}/${prefixLength + 1}`, prefixLength };
}

/** Retries a checkpoint refused because a reset connection has not reached the sandbox's stack yet. */
async function checkpointWhenQuiet(checkpoint: () => Promise<unknown>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await checkpoint();
      return;
    } catch (error) {
      if (attempt >= 50 || !/connection .*still open/.test((error as Error).message)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** A server that greets every connection with `greeting` and closes it; its sockets go into `connections`. */
function listen(host: string, port: number, greeting: string, connections: Set<Socket>): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => {
      connections.add(socket);
      socket.once('close', () => connections.delete(socket));
      socket.end(greeting);
    });
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
