import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { coreFixture, type CoreFixture } from '../../support/core-fixture.js';
import { resourcesOf } from '../../../src/core/session-service.js';
import { parseContract } from '../../../src/policy/session-contract.js';
import { AirlockError } from '../../../src/core/errors.js';

const DEFAULT_CONTRACT = parseContract({ version: 1 });
const DEFAULT_RESOURCES = resourcesOf(DEFAULT_CONTRACT);

/** A fixture whose core keeps `size` machines warm for the default class (the fake driver, the test image). */
function pooled(size: number, extra: { maxClasses?: number } = {}): CoreFixture {
  return coreFixture({
    warmPool: {
      size,
      defaultClass: { imageName: 'test-image', resources: DEFAULT_RESOURCES, filesystem: DEFAULT_CONTRACT.filesystem },
      retryMs: 60_000,
      ...extra,
    },
  });
}

async function filled(fx: CoreFixture): Promise<void> {
  fx.core.pool.start();
  await fx.core.pool.settled();
}

const poolDisks = (fx: CoreFixture) => fx.disks.existing().filter((id) => id.startsWith('pool_'));

describe('WarmPool', () => {
  let fx: CoreFixture;
  afterEach(() => fx.close());

  it('keeps machines ready, hands one to a create with its disk and a fresh identity, and refills', async () => {
    fx = pooled(2);
    await filled(fx);
    assert.equal(fx.driver.sandboxes.size, 2, 'two machines started before any create');
    assert.equal(poolDisks(fx).length, 2);
    const warmIds = [...fx.driver.sandboxes.keys()];
    const first = await fx.sessions.create({ contract: fx.contract() });
    const second = await fx.sessions.create({ contract: fx.contract() });
    for (const session of [first, second]) {
      assert.ok(warmIds.includes(session.sandbox?.sandboxId ?? ''), 'the machine came from the pool');
      assert.equal(session.sandbox?.sessionId, session.id);
      assert.equal(fx.driver.owners.get(session.sandbox?.sandboxId ?? ''), session.id, 'the driver names the session as owner');
      assert.equal(fx.driver.identities.get(session.sandbox?.sandboxId ?? '')?.hostname, session.id.replace(/_/g, '-'));
      assert.ok(fx.disks.existing().includes(session.id), 'the disk moved under the session');
      const started = (await fx.store.listAudit(session.id)).find((record) => record.type === 'session.started');
      assert.match(String(started?.data['warmPool']), /^pool_/, 'the audit says which warm machine it was');
      assert.equal(typeof started?.data['claimMs'], 'number');
    }
    const [a, b] = [first, second].map((session) => fx.driver.identities.get(session.sandbox?.sandboxId ?? '')?.machineId);
    assert.match(a ?? '', /^[0-9a-f]{32}$/);
    assert.notEqual(a, b, 'every claimed machine gets its own machine id');
    await fx.core.pool.settled();
    const status = fx.core.pool.status();
    assert.equal(status.classes[0]?.ready, 2, 'refilled in the background');
    assert.equal(status.classes[0]?.claims, 2);
    assert.equal(poolDisks(fx).length, 2);
    // The claimed machine behaves as any other: it suspends and resumes.
    await fx.sessions.suspend(first.id);
    assert.equal((await fx.sessions.resume(first.id)).state, 'running');
  });

  it('starts another class cold, then keeps that class warm too', async () => {
    fx = pooled(1);
    await filled(fx);
    const bigger = fx.contract({ resources: { memoryMb: 1024 } });
    const cold = await fx.sessions.create({ contract: bigger });
    const coldStart = (await fx.store.listAudit(cold.id)).find((record) => record.type === 'session.started');
    assert.equal(coldStart?.data['warmPool'], undefined, 'no machine of that class was ready');
    await fx.core.pool.settled();
    const learned = fx.core.pool.status().classes.find((each) => each.resources.memoryMb === 1024);
    assert.deepEqual([learned?.ready, learned?.misses], [1, 1]);
    const warm = await fx.sessions.create({ contract: bigger });
    const warmStart = (await fx.store.listAudit(warm.id)).find((record) => record.type === 'session.started');
    assert.match(String(warmStart?.data['warmPool']), /^pool_/);
  });

  it('keeps at most maxClasses classes: one beyond them is not kept warm', async () => {
    fx = pooled(1, { maxClasses: 1 });
    await filled(fx);
    await fx.sessions.create({ contract: fx.contract({ resources: { memoryMb: 1024 } }) });
    await fx.core.pool.settled();
    assert.deepEqual(
      fx.core.pool.status().classes.map((each) => each.resources.memoryMb),
      [DEFAULT_RESOURCES.memoryMb],
    );
    assert.equal(fx.driver.sandboxes.size, 2, 'the default machine and the cold session, nothing more');
  });

  it('never serves per-call or networked sessions from a pool', async () => {
    fx = pooled(1);
    await filled(fx);
    const perCall = await fx.sessions.create({ contract: fx.contract(), mode: 'per-call' });
    assert.equal(perCall.sandbox, null);
    const machine = await fx.sessions.create({ contract: fx.contract() });
    await fx.core.pool.settled();
    const networked = { ...machine, id: 'ses_networked', contract: { ...machine.contract, network: { allowedDomains: ['example.org'] } } } as typeof machine;
    assert.equal(await fx.core.pool.claim(networked, fx.images.image), undefined);
    assert.equal(fx.core.pool.status().classes[0]?.ready, 1, 'the warm machine is still there');
  });

  it('falls back to a cold start when a claim fails, and leaves nothing of the warm machine', async () => {
    fx = pooled(1);
    await filled(fx);
    const [warmId] = [...fx.driver.sandboxes.keys()];
    const personalize = fx.driver.personalize.bind(fx.driver);
    fx.driver.personalize = async (handle, identity) => {
      if (handle.sandboxId === warmId) throw new AirlockError('DRIVER_FAILED', 'the agent did not answer');
      return personalize(handle, identity);
    };
    const session = await fx.sessions.create({ contract: fx.contract() });
    assert.equal(session.state, 'running');
    assert.notEqual(session.sandbox?.sandboxId, warmId, 'a machine of its own');
    assert.equal(fx.driver.sandboxes.has(warmId ?? ''), false, 'the failed warm machine was destroyed');
    await fx.core.pool.settled();
    assert.equal(poolDisks(fx).length, 1, 'only the refill has a pool disk');
  });

  it('reports a machine that cannot start, leaves no disk behind, and creates still work', async () => {
    fx = pooled(1);
    fx.driver.start = async () => {
      throw new AirlockError('DRIVER_FAILED', 'runsc refused');
    };
    await filled(fx);
    const status = fx.core.pool.status();
    assert.equal(status.classes[0]?.ready, 0);
    assert.equal(status.lastFailure?.code, 'DRIVER_FAILED');
    assert.deepEqual(poolDisks(fx), []);
  });

  it('throws away a machine of an image that was rebuilt since it started', async () => {
    fx = pooled(1);
    await filled(fx);
    const [staleId] = [...fx.driver.sandboxes.keys()];
    (fx.images.image as { digest: string }).digest = 'sha256:rebuilt';
    const session = await fx.sessions.create({ contract: fx.contract() });
    assert.notEqual(session.sandbox?.sandboxId, staleId);
    await fx.core.pool.settled();
    assert.equal(fx.driver.sandboxes.has(staleId ?? ''), false, 'the stale machine is gone');
  });

  it('destroys unclaimed machines and their disks on close', async () => {
    fx = pooled(2);
    await filled(fx);
    assert.equal(fx.driver.sandboxes.size, 2);
    await fx.core.pool.close();
    assert.equal(fx.driver.sandboxes.size, 0);
    assert.deepEqual(poolDisks(fx), []);
    assert.equal(
      await fx.core.pool.claim(await fx.sessions.create({ contract: fx.contract() }), fx.images.image),
      undefined,
      'a closed pool hands out nothing',
    );
  });

  it('leaves what a crash left to the reconciler: no session owns a warm machine', async () => {
    fx = pooled(2);
    await filled(fx);
    const report = await fx.reconcile();
    assert.equal(report.orphansRemoved.filter((name) => name.startsWith('disk:pool_')).length, 2);
    assert.equal(report.orphansRemoved.filter((name) => name.includes('pool_')).length, 4, 'both machines and both disks');
    assert.equal(fx.driver.sandboxes.size, 0);
  });

  it('starts nothing with size 0', async () => {
    fx = pooled(0);
    await filled(fx);
    assert.equal(fx.driver.sandboxes.size, 0);
    assert.deepEqual(fx.core.pool.status().classes, []);
  });
});
