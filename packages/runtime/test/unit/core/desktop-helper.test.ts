/**
 * The host's side of the desktop helper, against helpers played by the test:
 * answers are used as they come (compressed ones inflated), an unknown
 * command or a machine without a helper falls back to running the program,
 * the helper is started once for calls at once, and a helper that answers
 * badly (garbage, too much, too late) fails the call without running it a
 * second time by the other way. The real helper: cli e2e desktop.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Duplex } from 'node:stream';
import { deflateSync } from 'node:zlib';
import { AirlockError } from '../../../src/core/errors.js';
import { DesktopHelpers } from '../../../src/core/desktop-helper.js';
import { DESKTOP_HELPER_PORT } from '../../../src/core/desktop-helper-script.js';
import type { CollectedOutput, DesktopRequest } from '../../../src/core/desktop-operations.js';
import type { ExecRequest, SandboxDriver, SandboxHandle } from '../../../src/core/sandbox-driver.js';

type Respond = (request: Record<string, unknown>) => Buffer | string | null;

/** A connection to a helper that answers each request line with `respond` (null: never answers). */
function helperConnection(respond: Respond, opened: Duplex[]): Duplex {
  let buffered = '';
  const stream = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      buffered += chunk.toString('utf8');
      const newline = buffered.indexOf('\n');
      if (newline >= 0) {
        const answer = respond(JSON.parse(buffered.slice(0, newline)) as Record<string, unknown>);
        buffered = buffered.slice(newline + 1);
        if (answer === 'close') stream.push(null);
        else if (answer !== null) stream.push(answer);
      }
      done();
    },
  });
  opened.push(stream);
  return stream;
}

/** A driver with a helper port that is listened on once `listening` is true, and execs answered by `exec`. */
function driverWith(options: { respond: Respond; listening: boolean; start?: (request: ExecRequest) => { exitCode: number; stdout: string } }) {
  const state = { listening: options.listening, connects: 0, starts: [] as ExecRequest[], opened: [] as Duplex[] };
  const driver = {
    async connect(_handle: SandboxHandle, port: number): Promise<Duplex> {
      assert.equal(port, DESKTOP_HELPER_PORT);
      state.connects++;
      if (!state.listening) throw new AirlockError('PORT_UNREACHABLE', `nothing listens on port ${port}`);
      return helperConnection(options.respond, state.opened);
    },
    async exec(_handle: SandboxHandle, request: ExecRequest) {
      state.starts.push(request);
      await new Promise((resolve) => setImmediate(resolve));
      const answer = options.start?.(request) ?? { exitCode: 127, stdout: '' };
      if (answer.exitCode === 0 && answer.stdout === 'ready\n') state.listening = true;
      request.onStdout?.(Buffer.from(answer.stdout));
      return { exitCode: answer.exitCode, timedOut: false, aborted: false, durationMs: 1 };
    },
  } as unknown as SandboxDriver;
  return { driver, state };
}

const handle: SandboxHandle = { sandboxId: 'sandbox-1', sessionId: 'session-1', driverData: {} };
const REQUEST: DesktopRequest = { argv: ['/usr/bin/xdotool', 'getactivewindow', 'getwindowname'], env: { DISPLAY: ':0' }, timeoutMs: 1000 };
const answer = (fields: Record<string, unknown>, body: Buffer | string = '') => Buffer.concat([Buffer.from(`${JSON.stringify(fields)}\n`), Buffer.from(body)]);

/** The fallback, recording what it was asked to run. */
function fallback() {
  const ran: DesktopRequest[] = [];
  const run = async (request: DesktopRequest): Promise<CollectedOutput> => {
    ran.push(request);
    return { exitCode: 0, timedOut: false, aborted: false, durationMs: 1, stdout: Buffer.from('from the program\n'), stderr: Buffer.alloc(0) };
  };
  return { ran, run };
}

describe('desktop helpers (helpers played by the test)', () => {
  it('runs a command through the helper, passes a screen dump its size hint, and keeps one connection for the next request', async () => {
    const asked: Record<string, unknown>[] = [];
    const { driver, state } = driverWith({
      listening: true,
      respond: (request) => {
        asked.push(request);
        return answer({ exitCode: 0, stdoutBytes: 14, stderr: '' }, 'bench - Window');
      },
    });
    const program = fallback();
    const helpers = new DesktopHelpers();
    const run = helpers.runner(driver, handle, program.run);
    const output = await run(REQUEST);
    assert.equal(output.stdout.toString(), 'bench - Window');
    assert.equal(output.exitCode, 0);
    await run({ argv: ['/usr/bin/xwd', '-root'], env: {}, timeoutMs: 1000, shrinkTo: 320 });
    assert.deepEqual(asked, [{ argv: REQUEST.argv }, { argv: ['/usr/bin/xwd', '-root'], shrink: 320 }]);
    assert.equal(program.ran.length, 0, 'the program was not started');
    assert.equal(state.starts.length, 0, 'a listening helper is not started again');
    assert.equal(state.connects, 1, 'the second request used the first connection');
    helpers.closeIdle('session-2');
    assert.ok(!state.opened[0]?.destroyed, 'another session’s lifecycle leaves it open');
    helpers.closeIdle('session-1');
    assert.ok(
      state.opened.every((stream) => stream.destroyed),
      'closed before a lifecycle operation of its session',
    );
    await run(REQUEST);
    assert.equal(state.connects, 2, 'a closed connection is not used again');
  });

  it('does not use a kept connection again once the helper ended it (killed while idle)', async () => {
    const { driver, state } = driverWith({ listening: true, respond: () => answer({ exitCode: 0, stdoutBytes: 2, stderr: '' }, 'ok') });
    const run = new DesktopHelpers().runner(driver, handle, fallback().run);
    await run(REQUEST);
    state.opened[0]?.push(null);
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(state.opened[0]?.destroyed, 'closed when the helper ended it');
    assert.equal((await run(REQUEST)).stdout.toString(), 'ok');
    assert.equal(state.connects, 2);
  });

  it('sends a request once more, on a new connection, when a kept one ends before a byte of answer', async () => {
    let calls = 0;
    const { driver, state } = driverWith({
      listening: true,
      respond: () => (++calls === 2 ? 'close' : answer({ exitCode: 0, stdoutBytes: 2, stderr: '' }, 'ok')),
    });
    const program = fallback();
    const run = new DesktopHelpers().runner(driver, handle, program.run);
    await run(REQUEST);
    assert.equal((await run(REQUEST)).stdout.toString(), 'ok');
    assert.equal(state.connects, 2);
    assert.equal(calls, 3, 'the helper was asked again, once');
    assert.equal(program.ran.length, 0);
  });

  it('keeps no connection while a lifecycle operation wants the machine', async () => {
    const { driver, state } = driverWith({ listening: true, respond: () => answer({ exitCode: 0, stdoutBytes: 2, stderr: '' }, 'ok') });
    let exclusiveWanted = true;
    const run = new DesktopHelpers({ mayKeep: () => !exclusiveWanted }).runner(driver, handle, fallback().run);
    await run(REQUEST);
    assert.ok(state.opened[0]?.destroyed);
    exclusiveWanted = false;
    await run(REQUEST);
    await run(REQUEST);
    assert.equal(state.connects, 2);
  });

  it('inflates a compressed answer to the size it announced', async () => {
    const dump = Buffer.alloc(200_000, 7);
    const compressed = deflateSync(dump);
    const { driver } = driverWith({
      listening: true,
      respond: () => answer({ exitCode: 0, stdoutBytes: compressed.length, stderr: '', encoding: 'zlib', outputBytes: dump.length }, compressed),
    });
    const output = await new DesktopHelpers().runner(driver, handle, fallback().run)(REQUEST);
    assert.ok(output.stdout.equals(dump));
  });

  it('gives the helper’s exit code and error text like a program’s', async () => {
    const { driver } = driverWith({ listening: true, respond: () => answer({ exitCode: 1, stdoutBytes: 0, stderr: 'no window has the focus' }) });
    const output = await new DesktopHelpers().runner(driver, handle, fallback().run)(REQUEST);
    assert.equal(output.exitCode, 1);
    assert.equal(output.stderr.toString(), 'no window has the focus');
  });

  it('runs the program when the helper does not know the command', async () => {
    const { driver } = driverWith({ listening: true, respond: () => '{"unsupported":true}\n' });
    const program = fallback();
    const output = await new DesktopHelpers().runner(driver, handle, program.run)(REQUEST);
    assert.equal(output.stdout.toString(), 'from the program\n');
    assert.deepEqual(program.ran, [REQUEST]);
  });

  it('starts the helper once for two calls at once, then uses it', async () => {
    const { driver, state } = driverWith({
      listening: false,
      start: () => ({ exitCode: 0, stdout: 'ready\n' }),
      respond: () => answer({ exitCode: 0, stdoutBytes: 2, stderr: '' }, 'ok'),
    });
    const program = fallback();
    const run = new DesktopHelpers().runner(driver, handle, program.run);
    const outputs = await Promise.all([run(REQUEST), run(REQUEST)]);
    assert.deepEqual(
      outputs.map((output) => output.stdout.toString()),
      ['ok', 'ok'],
    );
    assert.equal(state.starts.length, 1);
    const start = state.starts[0];
    assert.deepEqual(start?.argv.slice(0, 2), ['/usr/bin/python3', '-c']);
    assert.match(Buffer.from(start?.stdin ?? []).toString(), /xdo_new/, 'the helper’s source goes in on stdin');
    assert.equal(program.ran.length, 0);
  });

  it('runs the programs when the machine cannot start a helper, and does not try again at once', async () => {
    let now = 1_000_000;
    const { driver, state } = driverWith({ listening: false, respond: () => null });
    const program = fallback();
    const run = new DesktopHelpers({ now: () => now }).runner(driver, handle, program.run);
    await run(REQUEST);
    await run(REQUEST);
    assert.equal(program.ran.length, 2);
    assert.equal(state.starts.length, 1, 'one try to start it');
    assert.equal(state.connects, 1, 'the second call went straight to the program');
    now += 61_000;
    await run(REQUEST);
    assert.equal(state.starts.length, 2, 'a minute later it tries again');
  });

  const hostile: [string, Respond, RegExp][] = [
    ['a header that is not JSON', () => 'not json\n', /not JSON/],
    ['a header without an end', () => 'x'.repeat(70 * 1024), /header longer than/],
    ['an exit code out of range', () => answer({ exitCode: 300, stdoutBytes: 0, stderr: '' }), /exit code/],
    ['an output too large to accept', () => answer({ exitCode: 0, stdoutBytes: 2 ** 31, stderr: '' }), /output size/],
    ['more output than announced', () => answer({ exitCode: 0, stdoutBytes: 2, stderr: '' }, 'three'), /more output than/],
    ['an unknown encoding', () => answer({ exitCode: 0, stdoutBytes: 0, stderr: '', encoding: 'gzip', outputBytes: 0 }), /unknown encoding/],
    [
      'a compressed output of another size',
      () => answer({ exitCode: 0, stdoutBytes: 11, stderr: '', encoding: 'zlib', outputBytes: 5 }, deflateSync('hello world').subarray(0, 11)),
      /inflate/,
    ],
    ['a connection closed half-way', () => 'close', /closed before/],
  ];
  for (const [what, respond, message] of hostile) {
    it(`fails the call, without running it again as a program, on ${what}`, async () => {
      const { driver, state } = driverWith({ listening: true, respond });
      const program = fallback();
      const run = new DesktopHelpers().runner(driver, handle, program.run);
      await assert.rejects(run(REQUEST), (error: AirlockError) => {
        assert.equal(error.code, 'DRIVER_FAILED');
        assert.match(error.message, message);
        return true;
      });
      assert.equal(program.ran.length, 0);
      assert.ok(state.opened.every((stream) => stream.destroyed));
      await run(REQUEST);
      assert.equal(program.ran.length, 1, 'the next call runs the program');
    });
  }

  it('gives up on a helper that does not answer within the command’s timeout and the grace', async () => {
    const { driver } = driverWith({ listening: true, respond: () => null });
    const run = new DesktopHelpers({ answerGraceMs: 20 }).runner(driver, handle, fallback().run);
    await assert.rejects(run({ ...REQUEST, timeoutMs: 10 }), { code: 'DRIVER_FAILED', message: /no whole answer within 30 ms/ });
  });
});
