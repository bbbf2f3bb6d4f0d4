/** Programs that make a sandbox hold memory, for the benches that checkpoint, restore or fork it. */

/**
 * A Python program that fills `mb` MiB with random bytes (1 MiB at a time, so the peak stays at
 * `mb`), writes /tmp/held, then sleeps; wait for /tmp/held before measuring.
 */
export function holdMemoryScript(mb: number): string {
  return `import os, time\nb = bytearray(${mb} * 1024 * 1024)\nfor i in range(${mb}):\n    b[i << 20:(i + 1) << 20] = os.urandom(1 << 20)\nopen('/tmp/held', 'w').write('1')\ntime.sleep(100000)`;
}

/** A shell command that starts `script` (already written to `path`) in the background and returns once it holds its memory. */
export function startHolderCommand(path: string): string {
  return `nohup python3 ${path} >/dev/null 2>&1 & while [ ! -f /tmp/held ]; do sleep 0.1; done`;
}
