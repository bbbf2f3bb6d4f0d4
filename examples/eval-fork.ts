/**
 * An eval over forks: prepare a machine once (install a tool, write the
 * task, add an on-fork hook), snapshot it, fork it into 8 branches, run a
 * different command in each in parallel, collect the results, terminate all.
 * Every branch starts from the same memory and files, with its own disk,
 * hostname, machine id and seed.
 *
 *   AIRLOCK_URL=... AIRLOCK_TOKEN=... npx tsx examples/eval-fork.ts   # exit 0 when every branch answered
 */
import { ForkError, Sandbox } from '@airlock/sdk';

/** The "tool": a small Python module with eight ways to sort, counting comparisons. */
const EVALKIT = `import functools, json, random, socket, sys, time

def run(strategy, numbers):
    count = [0]
    def less(a, b):
        count[0] += 1
        return a < b
    def bubble(xs):
        xs = list(xs)
        for i in range(len(xs)):
            for j in range(len(xs) - 1 - i):
                if less(xs[j + 1], xs[j]): xs[j], xs[j + 1] = xs[j + 1], xs[j]
        return xs
    def insertion(xs):
        out = []
        for x in xs:
            i = len(out)
            while i > 0 and less(x, out[i - 1]): i -= 1
            out.insert(i, x)
        return out
    def selection(xs):
        xs = list(xs)
        for i in range(len(xs)):
            m = i
            for j in range(i + 1, len(xs)):
                if less(xs[j], xs[m]): m = j
            xs[i], xs[m] = xs[m], xs[i]
        return xs
    def merge(xs):
        if len(xs) < 2: return list(xs)
        a, b = merge(xs[:len(xs) // 2]), merge(xs[len(xs) // 2:])
        out = []
        while a and b: out.append((b if less(b[0], a[0]) else a).pop(0))
        return out + a + b
    def quick(xs):
        if len(xs) < 2: return list(xs)
        pivot = random.choice(xs)
        return quick([x for x in xs if less(x, pivot)]) + [x for x in xs if x == pivot] + quick([x for x in xs if less(pivot, x)])
    def shell(xs):
        xs, gap = list(xs), len(xs) // 2
        while gap:
            for i in range(gap, len(xs)):
                j = i
                while j >= gap and less(xs[j], xs[j - gap]): xs[j], xs[j - gap] = xs[j - gap], xs[j]; j -= gap
            gap //= 2
        return xs
    def heap(xs):
        import heapq
        class Item:
            def __init__(self, x): self.x = x
            def __lt__(self, other): return less(self.x, other.x)
        items = [Item(x) for x in xs]
        heapq.heapify(items)
        return [heapq.heappop(items).x for _ in range(len(items))]
    def builtin(xs):
        return sorted(xs, key=functools.cmp_to_key(lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0)))
    started = time.perf_counter()
    result = locals()[strategy](numbers)
    return {'strategy': strategy, 'correct': result == sorted(numbers), 'comparisons': count[0], 'ms': round((time.perf_counter() - started) * 1000, 2)}

if __name__ == '__main__':
    random.seed(open('/workspace/seed').read().strip())  # written by the on-fork hook: differs per branch
    task = json.load(open('/workspace/task.json'))
    print(json.dumps({**run(sys.argv[1], task['numbers']), 'host': socket.gethostname()}))
`;

/** The on-fork hook: the branch's own seed, for the programs started in it. */
const SEED_HOOK = '#!/bin/sh\necho "$AIRLOCK_FORK_SEED" > /workspace/seed\necho "branch $AIRLOCK_BRANCH_INDEX seeded"\n';

const STRATEGIES = ['bubble', 'insertion', 'selection', 'merge', 'quick', 'shell', 'heap', 'builtin'];

const parent = await Sandbox.create();
const branches: Sandbox[] = [];
let failed = false;
try {
  // 1. Prepare once: the tool goes into the image's Python path (the root layer), the task into /workspace.
  await parent.files.write('/usr/local/lib/python3.11/dist-packages/evalkit.py', EVALKIT);
  await parent.files.write('/workspace/task.json', JSON.stringify({ numbers: Array.from({ length: 300 }, (_, i) => (i * 7919) % 1009) }));
  await parent.files.write('/etc/airlock/hooks/on-fork.d/10-seed', SEED_HOOK);
  await parent.commands.run('chmod +x /etc/airlock/hooks/on-fork.d/10-seed && echo parent > /workspace/seed && python3 -c "import evalkit"');

  // 2. Snapshot: memory, processes and disk at this instant; the parent keeps running.
  const snapshot = await parent.snapshots.create({ name: 'prepared' });
  console.log(`snapshot ${snapshot.id}: ${(snapshot.sizeBytes / 1048576).toFixed(1)} MiB, ${snapshot.contents.join(' + ')}`);

  // 3. Fork into 8 branches.
  const started = performance.now();
  try {
    branches.push(...(await parent.fork({ count: STRATEGIES.length, snapshotId: snapshot.id })));
  } catch (error) {
    if (!(error instanceof ForkError)) throw error;
    branches.push(...(error as ForkError<Sandbox>).created); // still ours to clean up
    throw error;
  }
  console.log(`forked ${branches.length} branches in ${Math.round(performance.now() - started)} ms`);

  // 4. A different command in each branch, all in parallel.
  const results = await Promise.all(
    branches.map(async (branch, index) => {
      const run = await branch.commands.run(['python3', '-m', 'evalkit', STRATEGIES[index] ?? 'builtin'], { cwd: '/workspace' });
      if (run.exitCode !== 0) return { strategy: STRATEGIES[index], error: run.stderr.trim() };
      return JSON.parse(run.stdout) as Record<string, unknown>;
    }),
  );

  // 5. Collect.
  console.table(results);
  failed = results.some((result) => 'error' in result || result['correct'] !== true);
} finally {
  // 6. Terminate all: machines, disks and snapshots go.
  await Promise.allSettled([...branches.map((branch) => branch.kill()), parent.kill()]);
}
process.exitCode = failed ? 1 : 0;
