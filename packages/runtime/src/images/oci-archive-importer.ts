/**
 * Imports an image archive into a root filesystem directory. Two formats:
 *
 * - OCI image layout tarball (`oci-layout`, `index.json`, `blobs/sha256/...`;
 *   what `skopeo copy ... oci-archive:` and Docker 25+ `docker save` write):
 *   index -> manifest -> config + layers, every blob checked against the
 *   digest and size of the descriptor that names it.
 * - Legacy `docker save` (`manifest.json`, `<id>/layer.tar`, `<hex>.json`):
 *   the config is checked against the digest in its file name, each layer
 *   against the config's `rootfs.diff_ids`.
 *
 * In both, the uncompressed layer stream is hashed while it is applied and
 * compared with `rootfs.diff_ids`; a mismatch fails the import (the caller
 * deletes the half-built tree). When an archive carries both, the OCI layout
 * wins: its descriptors name a digest for every blob.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { AirlockError } from '../core/errors.js';
import type { ImageProgress } from '../core/image-catalog.js';
import { hostArchitecture } from './host-architecture.js';
import { imageProblem, problemOf, REEXPORT_HINT } from './image-errors.js';
import { OciArchiveContents, parseJson, type ArchiveFile } from './oci-archive-contents.js';
import { LayerApplier } from './oci-layer-applier.js';

/** What Airlock keeps from an imported image besides its files. */
export interface ImportedImage {
  format: 'oci-layout' | 'docker-save';
  /** `sha256:` of the image config blob (Docker's image id) */
  configDigest: string;
  /** `sha256:` of the OCI manifest (OCI layout only: docker save has no manifest blob) */
  manifestDigest: string | undefined;
  /** `Env` of the image config, as a map */
  env: Record<string, string>;
  /** `WorkingDir` of the image config, when set */
  workingDir: string | undefined;
  layerCount: number;
}

/** Options of `importOciArchive`. */
export interface ImportOptions {
  archivePath: string;
  /** empty directory that receives the root filesystem */
  rootfsDir: string;
  /** empty directory for the unpacked archive; the caller deletes it */
  scratchDir: string;
  onProgress?: (progress: ImageProgress) => void;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const MANIFEST_TYPES = new Set(['application/vnd.oci.image.manifest.v1+json', 'application/vnd.docker.distribution.manifest.v2+json']);
const INDEX_TYPES = new Set(['application/vnd.oci.image.index.v1+json', 'application/vnd.docker.distribution.manifest.list.v2+json']);

const descriptorSchema = z.object({
  mediaType: z.string().optional(),
  digest: z.string(),
  size: z.number().int().nonnegative(),
  platform: z.object({ architecture: z.string(), os: z.string() }).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
type Descriptor = z.infer<typeof descriptorSchema>;
const indexSchema = z.object({ manifests: z.array(descriptorSchema) });
const manifestSchema = z.object({ config: descriptorSchema, layers: z.array(descriptorSchema) });
const dockerManifestSchema = z.array(z.object({ Config: z.string(), Layers: z.array(z.string()) }));
const configSchema = z.object({
  architecture: z.string().optional(),
  os: z.string().optional(),
  config: z
    .object({ Env: z.array(z.string()).nullish(), WorkingDir: z.string().nullish() })
    .nullish(),
  rootfs: z.object({ diff_ids: z.array(z.string()) }),
});

interface LayerPlan {
  file: ArchiveFile;
  diffId: string;
  label: string;
}

interface ImportPlan {
  format: ImportedImage['format'];
  manifestDigest: string | undefined;
  configDigest: string;
  config: z.infer<typeof configSchema>;
  layers: LayerPlan[];
}

/** Imports the image in `archivePath` into `rootfsDir`; INVALID_IMAGE (naming the file and the problem) when the archive is unusable. */
export async function importOciArchive(options: ImportOptions): Promise<ImportedImage> {
  const report = (phase: string, message: string, fraction: number): void => options.onProgress?.({ phase, message, fraction });
  try {
    report('read', `Reading ${options.archivePath}`, 0);
    const contents = await OciArchiveContents.unpack(options.archivePath, options.scratchDir);
    const plan =
      contents.has('oci-layout') && contents.has('index.json')
        ? await ociLayoutPlan(contents)
        : contents.has('manifest.json')
          ? await dockerSavePlan(contents)
          : fail('it has neither index.json (OCI layout) nor manifest.json (docker save)');
    checkPlatform(plan.config);

    const applier = new LayerApplier(options.rootfsDir);
    for (const [index, layer] of plan.layers.entries()) {
      report('layers', `Applying ${layer.label}`, 0.1 + (0.85 * index) / plan.layers.length);
      const diffId = await applier.apply(layer.file.hostPath, layer.label);
      if (diffId !== layer.diffId) {
        fail(`${layer.label} does not match its diff id in the image config (expected ${layer.diffId}, got ${diffId})`);
      }
    }
    await applier.finish();
    report('layers', `Applied ${plan.layers.length} layers`, 0.95);
    return {
      format: plan.format,
      configDigest: plan.configDigest,
      manifestDigest: plan.manifestDigest,
      env: parseEnv(plan.config.config?.Env ?? []),
      workingDir: plan.config.config?.WorkingDir || undefined,
      layerCount: plan.layers.length,
    };
  } catch (error) {
    const problem = problemOf(error);
    if (problem === undefined) throw error;
    throw new AirlockError('INVALID_IMAGE', `Cannot import ${options.archivePath}: ${problem}. ${REEXPORT_HINT}.`, {
      cause: error,
      details: { ...(error as AirlockError).details, archivePath: options.archivePath },
    });
  }
}

async function ociLayoutPlan(contents: OciArchiveContents): Promise<ImportPlan> {
  const index = validate(indexSchema, await contents.readJson('index.json'), 'index.json');
  const manifestDescriptor = await chooseManifest(contents, index.manifests, 0);
  const manifest = validate(manifestSchema, await readBlobJson(contents, manifestDescriptor, 'the image manifest'), 'the image manifest');
  const config = validate(configSchema, await readBlobJson(contents, manifest.config, 'the image config'), 'the image config');
  const diffIds = checkedDiffIds(config, manifest.layers.length);
  const layers = manifest.layers.map((descriptor, index): LayerPlan => {
    const label = `layer ${index + 1} of ${manifest.layers.length} (${descriptor.digest})`;
    return { file: blob(contents, descriptor, label), diffId: diffIds[index] as string, label };
  });
  return { format: 'oci-layout', manifestDigest: manifestDescriptor.digest, configDigest: manifest.config.digest, config, layers };
}

async function dockerSavePlan(contents: OciArchiveContents): Promise<ImportPlan> {
  const entries = validate(dockerManifestSchema, await contents.readJson('manifest.json'), 'manifest.json');
  const entry = entries[0];
  if (entries.length !== 1 || entry === undefined) fail(`manifest.json lists ${entries.length} images; save exactly one image per file`);
  // legacy names the config `<hex>.json`, Docker 25+ `blobs/sha256/<hex>`: either way the name is the digest
  const configHex = /([0-9a-f]{64})(?:\.json)?$/.exec(entry.Config)?.[1];
  if (configHex === undefined) fail(`the config name ${JSON.stringify(entry.Config)} carries no sha256 to check it against`);
  const configDigest = `sha256:${configHex}`;
  const configFile = contents.file(entry.Config) ?? fail(`the image config ${entry.Config} is missing`);
  checkDigest(configFile, configDigest, `the image config ${entry.Config}`);
  const config = validate(configSchema, await contents.readJson(entry.Config), 'the image config');
  const diffIds = checkedDiffIds(config, entry.Layers.length);
  const layers = entry.Layers.map((name, index): LayerPlan => {
    const label = `layer ${index + 1} of ${entry.Layers.length} (${name})`;
    const file = contents.file(name) ?? fail(`${label} is missing from the archive`);
    const blobHex = /^blobs\/sha256\/([0-9a-f]{64})$/.exec(name)?.[1];
    if (blobHex !== undefined) checkDigest(file, `sha256:${blobHex}`, label);
    return { file, diffId: diffIds[index] as string, label };
  });
  return { format: 'docker-save', manifestDigest: undefined, configDigest, config, layers };
}

/** Picks the manifest for this host from an index (following nested indexes); attestation entries are skipped. */
async function chooseManifest(contents: OciArchiveContents, descriptors: Descriptor[], depth: number): Promise<Descriptor> {
  const images = descriptors.filter(
    (d) => d.annotations?.['vnd.docker.reference.type'] !== 'attestation-manifest' && (d.mediaType === undefined || MANIFEST_TYPES.has(d.mediaType) || INDEX_TYPES.has(d.mediaType)),
  );
  const arch = hostArchitecture();
  const chosen =
    images.length === 1 ? images[0] : images.find((d) => d.platform?.os === 'linux' && d.platform.architecture === arch);
  if (chosen === undefined) {
    const platforms = images.map((d) => (d.platform ? `${d.platform.os}/${d.platform.architecture}` : 'unknown')).join(', ');
    fail(images.length === 0 ? 'index.json lists no image manifest' : `it holds ${images.length} images (${platforms}) and none for linux/${arch}`);
  }
  if (chosen.mediaType === undefined || !INDEX_TYPES.has(chosen.mediaType)) return chosen;
  if (depth >= 2) fail('its image indexes are nested too deeply');
  const nested = validate(indexSchema, await readBlobJson(contents, chosen, 'a nested image index'), 'a nested image index');
  return chooseManifest(contents, nested.manifests, depth + 1);
}

/** The blob a descriptor names, checked against its digest and size. */
function blob(contents: OciArchiveContents, descriptor: Descriptor, what: string): ArchiveFile {
  if (!DIGEST.test(descriptor.digest)) fail(`${what} has an unsupported digest ${JSON.stringify(descriptor.digest)} (only sha256 is read)`);
  const name = `blobs/sha256/${descriptor.digest.slice('sha256:'.length)}`;
  const file = contents.file(name) ?? fail(`${what} is missing from the archive (no ${name})`);
  if (file.size !== descriptor.size) fail(`${what} is ${file.size} bytes but its descriptor says ${descriptor.size}`);
  checkDigest(file, descriptor.digest, what);
  return file;
}

async function readBlobJson(contents: OciArchiveContents, descriptor: Descriptor, what: string): Promise<unknown> {
  const file = blob(contents, descriptor, what);
  return parseJson(await readFile(file.hostPath, 'utf8'), what);
}

function checkDigest(file: ArchiveFile, expected: string, what: string): void {
  if (`sha256:${file.sha256}` !== expected) {
    fail(`${what} is corrupt: its sha256 is sha256:${file.sha256} but the archive says ${expected}`);
  }
}

function checkedDiffIds(config: z.infer<typeof configSchema>, layerCount: number): string[] {
  const diffIds = config.rootfs.diff_ids;
  if (diffIds.length !== layerCount) fail(`the image config lists ${diffIds.length} diff ids for ${layerCount} layers`);
  const bad = diffIds.find((id) => !DIGEST.test(id));
  if (bad !== undefined) fail(`the image config has an unsupported diff id ${JSON.stringify(bad)}`);
  return diffIds;
}

function checkPlatform(config: z.infer<typeof configSchema>): void {
  const arch = hostArchitecture();
  if (config.os !== undefined && config.os !== 'linux') fail(`the image is for ${config.os}, not linux`);
  if (config.architecture !== undefined && config.architecture !== arch) {
    fail(`the image is built for ${config.architecture} but this host is ${arch} (pull it with --platform linux/${arch} before exporting)`);
  }
}

/** `["K=V", ...]` to a map; entries without `=` are ignored, later duplicates win. */
function parseEnv(entries: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of entries) {
    const equals = entry.indexOf('=');
    if (equals > 0) env[entry.slice(0, equals)] = entry.slice(equals + 1);
  }
  return env;
}

function validate<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  fail(`${what} is not in the expected format (${issue ? `${issue.path.join('.') || 'top level'}: ${issue.message}` : 'unknown problem'})`);
}

function fail(problem: string): never {
  throw imageProblem(problem);
}
