/**
 * The images sessions start from: read-only root filesystems with a name and
 * a content digest. Implemented on the host by `LocalImageCatalog`.
 */

/** One image, as stored. */
export interface ImageRecord {
  name: string;
  /** `sha256:<hex>` over the image content (see docs/images.md for how it is computed) */
  digest: string;
  /** absolute path of the read-only root filesystem on the host */
  rootfsDir: string;
  source: 'debootstrap' | 'oci-archive';
  sizeBytes: number;
  createdAt: string;
  /** default environment and working directory declared by the image (OCI config), if any */
  env: Record<string, string>;
  /** whether the image has a display (built with `airlock images build --desktop`) */
  desktop?: boolean;
  /** whether the image has on-start hooks (`/etc/airlock/hooks/on-start.d`); absent: unknown, so they are looked for */
  startHooks?: boolean;
}

/** A progress line for long operations (build, import). */
export interface ImageProgress {
  phase: string;
  message: string;
  /** 0..1 when known */
  fraction?: number;
}

/** Lists, builds, imports and removes images. */
export interface ImageCatalog {
  list(): Promise<ImageRecord[]>;
  /** Throws IMAGE_NOT_FOUND naming `airlock images build` / `import` as the fix. */
  get(name: string): Promise<ImageRecord>;
  /**
   * The image's root filesystem as a block device: a read-only ext4 image file of `rootfsDir`, built
   * once per digest and cached (for drivers whose `volumes.rootfs` is `block-device`).
   */
  rootfsBlockDevice(name: string): Promise<string>;
  /** Builds the Debian bookworm image with debootstrap (cached); `name` defaults to `debian-bookworm` (`debian-bookworm-desktop` with `desktop`). */
  buildDebian(options: { name?: string; onProgress?: (p: ImageProgress) => void; force?: boolean; desktop?: boolean }): Promise<ImageRecord>;
  /** Imports an OCI image archive (docker save / skopeo / OCI layout tarball). */
  importOciArchive(options: { name: string; archivePath: string; onProgress?: (p: ImageProgress) => void }): Promise<ImageRecord>;
  /** Removes an image; refuses with INVALID_STATE when `inUse` says a live session uses it. */
  remove(name: string, inUse: (name: string) => boolean): Promise<void>;
}
