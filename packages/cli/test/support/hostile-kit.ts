/**
 * What every file of the hostile suite shares: raw calls to the API that
 * keep the status and error code of each answer (an attack's outcome is an
 * answer, not an exception), python probes run inside a session, a marker
 * that exists only on the host, and host-side readings (file hashes, the
 * server's resident memory) that prove nothing outside the sandbox moved.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestInstallation } from './test-installation.js';

/** One answer of the API: `code` is 'ok' for a 2xx, else the server's error code. */
export interface Answer {
  status: number;
  code: string;
  message: string;
  /** `result` of a completed tool call, or the body of any other 2xx answer */
  result: Record<string, unknown>;
  body: Record<string, unknown>;
}

/** What a command printed, as the exec tool answered it. */
export interface CommandOutput {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** The API of one installation, spoken as an attacker would: raw requests, every answer kept. */
export class HostileApi {
  constructor(private readonly installation: TestInstallation) {}

  /** Sends one request with the installation's token (unless `headers` overrides it). */
  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const response = await fetch(`${this.installation.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.installation.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await response.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      parsed = { text };
    }
    const error = parsed['error'] as { code?: string; message?: string } | undefined;
    const ok = response.status >= 200 && response.status < 300;
    return {
      status: response.status,
      code: ok ? 'ok' : (error?.code ?? `HTTP_${response.status}`),
      message: error?.message ?? '',
      result: ((parsed['result'] as Record<string, unknown> | undefined) ?? parsed) as Record<string, unknown>,
      body: parsed,
    };
  }

  /** Calls a tool; refusals come back as answers with their code. */
  tool(sessionId: string, tool: string, args: Record<string, unknown>): Promise<Answer> {
    return this.request('POST', `/v1/sessions/${encodeURIComponent(sessionId)}/tools/${tool}`, args);
  }

  /** Creates a session (with `contract`, when given) and returns its id. */
  async createSession(contract?: Record<string, unknown>): Promise<string> {
    const answer = await this.request('POST', '/v1/sessions', contract === undefined ? {} : { contract });
    assert.equal(answer.status, 201, `creating a session failed: ${answer.code} ${answer.message}`);
    return String(answer.body['id']);
  }

  /** The session as the API shows it. */
  async session(sessionId: string): Promise<{ state: string; failure: { code: string; message: string } | null } & Record<string, unknown>> {
    const answer = await this.request('GET', `/v1/sessions/${encodeURIComponent(sessionId)}`);
    assert.equal(answer.status, 200, `${answer.code} ${answer.message}`);
    return answer.body as { state: string; failure: { code: string; message: string } | null } & Record<string, unknown>;
  }

  /** Runs a shell command that must be allowed and complete; its exit code is returned, not asserted. */
  async run(sessionId: string, command: string, options: { timeoutMs?: number; env?: Record<string, string>; stdin?: string; ephemeral?: boolean } = {}): Promise<CommandOutput> {
    const answer = await this.tool(sessionId, 'exec', { command, timeoutMs: options.timeoutMs ?? 60_000, ...(options.env ? { env: options.env } : {}), ...(options.stdin === undefined ? {} : { stdin: options.stdin }), ...(options.ephemeral ? { ephemeral: true } : {}) });
    assert.equal(answer.code, 'ok', `\`${command.slice(0, 200)}\` in ${sessionId} was not run: ${answer.code} ${answer.message}`);
    return { exitCode: Number(answer.result['exitCode']), stdout: String(answer.result['stdout']), stderr: String(answer.result['stderr']) };
  }

  /** Runs a shell command that must exit 0, and returns its stdout. */
  async sh(sessionId: string, command: string, options: { timeoutMs?: number } = {}): Promise<string> {
    const output = await this.run(sessionId, command, options);
    assert.equal(output.exitCode, 0, `\`${command.slice(0, 200)}\` in ${sessionId} exited ${output.exitCode}: ${output.stderr}`);
    return output.stdout;
  }

  /** Runs a python program (read from stdin) in the session; its last stdout line is JSON. */
  async python<T>(sessionId: string, program: string, input: Record<string, unknown> = {}, timeoutMs = 120_000): Promise<T> {
    const answer = await this.tool(sessionId, 'exec', { argv: ['python3', '-', JSON.stringify(input)], stdin: program, timeoutMs });
    assert.equal(answer.code, 'ok', `python in ${sessionId} was not run: ${answer.code} ${answer.message}`);
    assert.equal(answer.result['exitCode'], 0, `python in ${sessionId} failed: ${String(answer.result['stderr'])}\n${String(answer.result['stdout'])}`);
    return JSON.parse(String(answer.result['stdout']).trim().split('\n').at(-1) ?? '{}') as T;
  }

  /** Writes a file through the files API, which must succeed. */
  async write(sessionId: string, path: string, content: string): Promise<void> {
    const answer = await this.tool(sessionId, 'files.write', { path, content });
    assert.equal(answer.code, 'ok', `writing ${path} in ${sessionId}: ${answer.code} ${answer.message}`);
  }

  /** Terminates a session (ignores one already gone). */
  async terminate(sessionId: string): Promise<void> {
    await this.request('DELETE', `/v1/sessions/${encodeURIComponent(sessionId)}`);
  }
}

/** A file that exists only on the host, under a temp dir of its own: no route from a sandbox may reach it. */
export interface HostMarker {
  dir: string;
  path: string;
  content: string;
  dispose(): void;
}

/** Makes a host-only marker file with random content. */
export function hostMarker(): HostMarker {
  const dir = mkdtempSync('/var/tmp/airlock-hostile-marker-');
  const content = `host-only-${randomBytes(8).toString('hex')}`;
  const path = join(dir, 'marker.txt');
  writeFileSync(path, content);
  return { dir, path, content, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A random needle; sandboxes get it in two halves so their own scripts never contain it whole. */
export function needle(prefix: string): { value: string; halves: [string, string] } {
  const value = `${prefix}-${randomBytes(8).toString('hex')}`;
  const middle = Math.floor(value.length / 2);
  return { value, halves: [value.slice(0, middle), value.slice(middle)] };
}

/** A host file or dir the driver bind-mounts read-only into a sandbox. */
export interface ReadOnlyBind {
  source: string;
  destination: string;
}

/** The read-only bind mounts of a session's machine, from the OCI spec of its sandbox on the host. */
export async function readOnlyBindSources(installation: TestInstallation, api: HostileApi, sessionId: string): Promise<ReadOnlyBind[]> {
  const sandboxId = String((await api.session(sessionId))['sandboxId']);
  const spec = JSON.parse(readFileSync(join(installation.dataDir, 'sandboxes', sandboxId, 'bundle', 'config.json'), 'utf8')) as {
    mounts: { type: string; source: string; destination: string; options?: string[] }[];
  };
  return spec.mounts.filter((mount) => mount.type === 'bind' && (mount.options ?? []).includes('ro')).map(({ source, destination }) => ({ source, destination }));
}

/** sha256 of a host file. */
export function sha256OfFile(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** The pid of the installation's server process, found by its data dir on the command line. */
export function serverProcessId(installation: TestInstallation): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (args.includes('serve') && args.includes(installation.dataDir)) return Number(entry);
  }
  throw new Error(`no server process for ${installation.dataDir}`);
}

/** Resident memory of a host process, in bytes. */
export function residentBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((row) => row.startsWith('VmRSS:'));
  return Number.parseInt(line?.replace(/\D+/g, '') ?? '0', 10) * 1024;
}

/** Samples `read` every `everyMs` until `work` settles; returns the work's value and the largest sample. */
export async function peakWhile<T>(work: Promise<T>, read: () => number, everyMs = 100): Promise<{ value: T; peak: number }> {
  let peak = read();
  let settled = false;
  const sampling = (async () => {
    while (!settled) {
      peak = Math.max(peak, read());
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  try {
    const value = await work;
    return { value, peak: Math.max(peak, read()) };
  } finally {
    settled = true;
    await sampling;
  }
}

/** Waits until `probe` returns something other than undefined, polling; fails naming `what`. */
export async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Runs `task` over `items`, `width` at a time; results in the order of `items`. */
export async function pooled<T, R>(items: readonly T[], task: (item: T, index: number) => Promise<R>, width = 4): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < items.length; index = next++) results[index] = await task(items[index] as T, index);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return results;
}
