/**
 * Mount points a sandbox's rules need that its image lacks. runsc cannot make
 * a bind's mount point in the read-only view of the image (measured: `mkdir …
 * read-only file system`), so each sandbox gets its own topmost lower layer
 * of the view (rootfs-view.ts) holding just those empty directories (and an
 * empty /etc/machine-id for the identity mount). A rule on a path the image
 * does not have then holds too: `denyWrite: ["/opt/app"]` keeps the agent
 * from creating /opt/app under a writable root.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { FilesystemMountPlan } from './filesystem-mounts.js';
import { safeHostPath } from './safe-host-path.js';

/** Makes `<stateDir>/mount-points` with what the image lacks; its path, or undefined when the image has every mount point. */
export async function prepareImageMountPoints(plan: FilesystemMountPlan, rootfsDir: string, stateDir: string): Promise<string | undefined> {
  const layer = join(stateDir, 'mount-points');
  let made = false;
  for (const mount of plan.mounts) {
    if (mount.region !== 'image') continue;
    const relative = mount.destination.slice(1);
    // A path through a symlink or a file of the image gets no mount (filesystem-mount-sources.ts says why):
    // a directory here would shadow the image's link.
    const found = await safeHostPath(rootfsDir, relative, { create: false }).catch(() => null);
    if (found !== undefined) continue;
    await mkdir(join(layer, dirname(relative)), { recursive: true });
    if (mount.identity) await writeFile(join(layer, relative), '');
    else await mkdir(join(layer, relative), { recursive: true });
    made = true;
  }
  return made ? layer : undefined;
}
