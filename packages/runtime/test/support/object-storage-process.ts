/**
 * An S3-compatible server for tests, as its own process: s3rver (default
 * S3RVER credentials, one bucket) behind a TCP relay on loopback. Run by
 * ObjectStorageServer (and by the CLI's end-to-end tests) so that a test
 * process that blocks (spawnSync) never blocks it, and so that s3rver's own
 * failures under concurrent writes to one key (it is a directory tree, not
 * an atomic store) cannot crash the test.
 *
 * Protocol: prints `{"port":N}` once listening; then reads commands on stdin,
 * one a line: `stop` cuts every connection and refuses new ones, `resume`
 * answers again on the same port; each is acknowledged by a line `ok CMD`.
 * It exits, deleting its data, when stdin ends (its parent went away).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import S3rver from 's3rver';

const BUCKET = process.env['TEST_BUCKET'] ?? 'airlock-test';
const directory = mkdtempSync('/tmp/airlock-s3rver-');
const sockets = new Set<Socket>();
let relay: Server | undefined;
let port = 0;

// s3rver can throw from a file stream when an object is deleted while being read; the request fails, the server goes on.
process.on('uncaughtException', (error) => process.stderr.write(`s3rver: ${error.message}\n`));

const s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: BUCKET, configs: [] }] });
const s3Port = (await s3.run()).port;

async function resume(): Promise<void> {
  if (relay) return;
  const next = createServer((client) => {
    const upstream = connect(s3Port, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    next.once('error', reject);
    next.listen(port, '127.0.0.1', () => resolve());
  });
  const address = next.address();
  port = typeof address === 'object' && address ? address.port : port;
  relay = next;
}

async function stop(): Promise<void> {
  const current = relay;
  relay = undefined;
  if (!current) return;
  const closed = new Promise<void>((resolve) => current.close(() => resolve()));
  for (const socket of sockets) socket.destroy();
  await closed;
}

await resume();
process.stdout.write(`${JSON.stringify({ port })}\n`);
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const command = line.trim();
  const done = command === 'stop' ? stop() : command === 'resume' ? resume() : Promise.reject(new Error(`unknown command ${command}`));
  done.then(
    () => process.stdout.write(`ok ${command}\n`),
    (error: Error) => process.stdout.write(`error ${command} ${error.message}\n`),
  );
});
lines.on('close', () => {
  void stop().finally(() => {
    s3.httpServer?.closeAllConnections();
    void s3.close().finally(() => {
      rmSync(directory, { recursive: true, force: true });
      process.exit(0);
    });
  });
});
