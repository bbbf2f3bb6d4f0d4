/**
 * The examples in examples/ run against a real server and gVisor
 * (each with its scripted model, no network) and exit 0 only when the
 * denial and the approval went as expected. They run side by side to keep
 * the file short.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { REPO_ROOT, TestInstallation } from '../support/mcp-test-kit.js';

const EXAMPLES = ['mcp-client.ts', 'ai-sdk-agent.ts', 'openai-agents-agent.ts', 'e2b-sdk.ts'];

function runExample(file: string, env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', resolve(REPO_ROOT, 'examples', file)], {
      cwd: REPO_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    // 'close', not 'exit': the last output may still be in the pipes when the child exits.
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code: code ?? -1, output });
    });
  });
}

describe('the examples', () => {
  let installation: TestInstallation;
  const runs = new Map<string, Promise<{ code: number; output: string }>>();
  before(async () => {
    installation = await TestInstallation.start();
    for (const file of EXAMPLES) runs.set(file, runExample(file, installation.env));
  });
  after(async () => {
    await Promise.allSettled(runs.values());
    await installation?.destroy();
  });

  for (const file of EXAMPLES) {
    it(`${file} shows a denied call and an approved one`, async () => {
      const { code, output } = await (runs.get(file) as Promise<{ code: number; output: string }>);
      assert.equal(code, 0, output);
      assert.match(output, /everything went as expected/);
      assert.match(output, /ok +rm was denied with the policy reason/);
      assert.match(output, /ok +the approved tar ran/);
    });
  }
});
