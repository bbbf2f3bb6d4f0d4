/**
 * Builds real tar files for the image tests: layers with exactly the headers
 * a test needs (including hostile ones no tar tool would write), and the two
 * archive formats around them (`docker save`, OCI layout), with correct
 * digests unless a test tampers with the files before they are packed.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

/** One entry of a hand-made tar. */
export interface TarSpec {
  name: string;
  type?: 'file' | 'dir' | 'symlink' | 'hardlink' | 'char' | 'fifo';
  content?: string | Buffer;
  mode?: number;
  uid?: number;
  gid?: number;
  /** symlink target or hardlink source */
  linkname?: string;
  /** seconds since the epoch */
  mtime?: number;
}

const TYPE_FLAGS = { file: '0', hardlink: '1', symlink: '2', char: '3', dir: '5', fifo: '6' } as const;

/** A ustar archive of `entries`, in order; names over 100 bytes get a pax header. */
export function makeTar(entries: readonly TarSpec[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const content = Buffer.from(entry.content ?? '');
    const type = entry.type ?? 'file';
    if (Buffer.byteLength(entry.name) > 100) {
      const record = paxRecord('path', entry.name);
      blocks.push(header({ name: 'PaxHeader', size: record.length, flag: 'x', mode: 0o644 }), pad(record));
    }
    blocks.push(
      header({
        name: entry.name.slice(0, 100),
        size: type === 'file' ? content.length : 0,
        flag: TYPE_FLAGS[type],
        mode: entry.mode ?? (type === 'dir' ? 0o755 : 0o644),
        uid: entry.uid ?? 0,
        gid: entry.gid ?? 0,
        linkname: entry.linkname ?? '',
        mtime: entry.mtime ?? 1_700_000_000,
      }),
    );
    if (type === 'file') blocks.push(pad(content));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/** A tar of the directory `dir` made by GNU tar (names like `./etc/x`, GNU long-name records). */
export function gnuTar(dir: string): Buffer {
  return execFileSync('tar', ['--create', '--numeric-owner', '--directory', dir, '.'], { maxBuffer: 1 << 30 });
}

/** What goes into a test image. */
export interface ImageSpec {
  /** uncompressed layer tars, lowest first */
  layers: Buffer[];
  /** gzip these layers (by index); default none */
  gzip?: readonly number[];
  env?: string[];
  workingDir?: string;
  architecture?: string;
  /** edits the archive's files (name -> bytes) after digests are computed, before packing */
  tamper?: (files: Map<string, Buffer>) => void;
}

/** sha256 hex of bytes. */
export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** A legacy `docker save` archive: `<id>/layer.tar`, `<hex>.json`, manifest.json, repositories. */
export function dockerSaveArchive(spec: ImageSpec): Buffer {
  const files = new Map<string, Buffer>();
  const config = configJson(spec);
  const configName = `${sha256(config)}.json`;
  files.set(configName, config);
  const layerNames = spec.layers.map((layer, index) => {
    const id = sha256(`layer-id-${index}-${sha256(layer)}`);
    files.set(`${id}/VERSION`, Buffer.from('1.0'));
    files.set(`${id}/json`, Buffer.from(JSON.stringify({ id })));
    files.set(`${id}/layer.tar`, spec.gzip?.includes(index) ? gzipSync(layer) : layer);
    return `${id}/layer.tar`;
  });
  files.set('repositories', Buffer.from(JSON.stringify({ test: { latest: 'x' } })));
  // docker save writes manifest.json last, which is why the importer unpacks before reading
  files.set('manifest.json', Buffer.from(JSON.stringify([{ Config: configName, RepoTags: ['test:latest'], Layers: layerNames }])));
  spec.tamper?.(files);
  return packFiles(files);
}

/** An OCI image layout tarball, as `skopeo copy ... oci-archive:` writes it. */
export function ociLayoutArchive(spec: ImageSpec): Buffer {
  const files = new Map<string, Buffer>();
  files.set('oci-layout', Buffer.from(JSON.stringify({ imageLayoutVersion: '1.0.0' })));
  const addBlob = (data: Buffer): { digest: string; size: number } => {
    const hex = sha256(data);
    files.set(`blobs/sha256/${hex}`, data);
    return { digest: `sha256:${hex}`, size: data.length };
  };
  const layers = spec.layers.map((layer, index) => {
    const gzipped = spec.gzip?.includes(index) === true;
    const blob = addBlob(gzipped ? gzipSync(layer) : layer);
    return { mediaType: `application/vnd.oci.image.layer.v1.tar${gzipped ? '+gzip' : ''}`, ...blob };
  });
  const config = { mediaType: 'application/vnd.oci.image.config.v1+json', ...addBlob(configJson(spec)) };
  const manifest = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config, layers }));
  const manifestBlob = addBlob(manifest);
  files.set(
    'index.json',
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifestBlob, annotations: { 'org.opencontainers.image.ref.name': 'latest' } }],
      }),
    ),
  );
  spec.tamper?.(files);
  return packFiles(files);
}

function configJson(spec: ImageSpec): Buffer {
  return Buffer.from(
    JSON.stringify({
      architecture: spec.architecture ?? hostArch(),
      os: 'linux',
      config: { Env: spec.env ?? ['PATH=/usr/local/bin:/usr/bin:/bin'], WorkingDir: spec.workingDir ?? '' },
      rootfs: { type: 'layers', diff_ids: spec.layers.map((layer) => `sha256:${sha256(layer)}`) },
    }),
  );
}

function hostArch(): string {
  return process.arch === 'x64' ? 'amd64' : process.arch;
}

function packFiles(files: Map<string, Buffer>): Buffer {
  const dirs = new Set<string>();
  for (const name of files.keys()) {
    const slash = name.lastIndexOf('/');
    if (slash > 0) dirs.add(name.slice(0, slash));
  }
  return makeTar([
    ...[...dirs].sort().map((name): TarSpec => ({ name: `${name}/`, type: 'dir' })),
    ...[...files].map(([name, content]): TarSpec => ({ name, content })),
  ]);
}

function header(fields: { name: string; size: number; flag: string; mode: number; uid?: number; gid?: number; linkname?: string; mtime?: number }): Buffer {
  const block = Buffer.alloc(512);
  block.write(fields.name, 0, 100);
  octal(block, 100, 8, fields.mode);
  octal(block, 108, 8, fields.uid ?? 0);
  octal(block, 116, 8, fields.gid ?? 0);
  octal(block, 124, 12, fields.size);
  octal(block, 136, 12, fields.mtime ?? 1_700_000_000);
  block.write(fields.flag, 156, 1);
  block.write(fields.linkname ?? '', 157, 100);
  block.write('ustar\u000000', 257, 8);
  block.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 8);
  return block;
}

function octal(block: Buffer, offset: number, length: number, value: number): void {
  block.write(`${value.toString(8).padStart(length - 1, '0')}\u0000`, offset, length);
}

function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  let length = Buffer.byteLength(body) + 1;
  while (String(length).length + Buffer.byteLength(body) !== length) length += 1;
  return Buffer.from(`${length}${body}`);
}

function pad(data: Buffer): Buffer {
  const remainder = data.length % 512;
  return remainder === 0 ? data : Buffer.concat([data, Buffer.alloc(512 - remainder)]);
}

/** A fresh temporary directory, deleted when the test ends. */
export async function temporaryDirectory(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'airlock-images-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** An assert.rejects matcher: an AirlockError with `code` whose message contains every one of `fragments`. */
export function airlockError(code: string, ...fragments: string[]): (error: unknown) => boolean {
  return (error: unknown) => {
    const actual = error as { code?: unknown; message?: unknown };
    if (actual.code !== code) throw new Error(`expected ${code}, got ${String(actual.code)}: ${String(actual.message)}`);
    for (const fragment of fragments) {
      if (!String(actual.message).includes(fragment)) throw new Error(`message lacks ${JSON.stringify(fragment)}: ${String(actual.message)}`);
    }
    return true;
  };
}
