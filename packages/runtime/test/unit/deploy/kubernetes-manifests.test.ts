/**
 * deploy/kubernetes/ checked offline, as CI cannot run Kubernetes: every
 * object against the Kubernetes OpenAPI schemas that kubernetes-models ships
 * (types, required fields, enums), and the references between objects that
 * a schema cannot see (Secret keys, ConfigMap, selectors, ports, volumes).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';

const ROOT = fileURLToPath(new URL('../../../../../../', import.meta.url));
const DIR = join(ROOT, 'deploy', 'kubernetes');

type Manifest = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; [key: string]: unknown };

/** A model class per apiVersion/kind: validate() checks the object against the Kubernetes OpenAPI schema. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/DaemonSet': DaemonSet,
  'v1/ConfigMap': ConfigMap,
  'v1/Namespace': Namespace,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
};

function manifests(): { file: string; object: Manifest }[] {
  const found: { file: string; object: Manifest }[] = [];
  for (const file of readdirSync(DIR).filter((name) => name.endsWith('.yaml') && name !== 'kustomization.yaml').sort()) {
    for (const document of parseAllDocuments(readFileSync(join(DIR, file), 'utf8'))) {
      assert.deepEqual(document.errors, [], `${file} is not valid YAML`);
      found.push({ file, object: document.toJSON() as Manifest });
    }
  }
  return found;
}

function one(kind: string, name?: string): Manifest {
  const match = manifests().filter(({ object }) => object.kind === kind && (name === undefined || object.metadata.name === name));
  assert.equal(match.length, 1, `exactly one ${kind}${name ? ` ${name}` : ''}`);
  return match[0]!.object;
}

function validate(object: Manifest): void {
  const Model = MODELS[`${object.apiVersion}/${object.kind}`];
  assert.ok(Model, `no schema for ${object.apiVersion} ${object.kind}`);
  new Model(object as never).validate();
}

describe('Kubernetes manifests (deploy/kubernetes)', () => {
  it('every object is valid against the Kubernetes schema of its kind', () => {
    const all = manifests();
    assert.ok(all.length >= 7);
    for (const { file, object } of all) {
      assert.doesNotThrow(() => validate(object), `${file}: ${object.kind} ${object.metadata.name}`);
      if (object.kind !== 'Namespace') assert.equal(object.metadata.namespace, 'airlock', `${file}: ${object.kind} ${object.metadata.name} is in the airlock namespace`);
    }
  });

  it('the schema check can fail: a wrong type or a missing field is refused', () => {
    const daemonSet = structuredClone(one('DaemonSet')) as Manifest & { spec: { template: { spec: { containers: { ports: { containerPort: unknown }[] }[] } } } };
    daemonSet.spec.template.spec.containers[0]!.ports[0]!.containerPort = 'http';
    assert.throws(() => validate(daemonSet), /containerPort must be integer/);
    const noSelector = structuredClone(one('DaemonSet')) as Manifest & { spec: { selector?: unknown } };
    delete noSelector.spec.selector;
    assert.throws(() => validate(noSelector), /must have required property selector/);
  });

  it('kustomization lists every manifest but the example Secret', () => {
    const kustomization = parseAllDocuments(readFileSync(join(DIR, 'kustomization.yaml'), 'utf8'))[0]!.toJSON() as { resources: string[] };
    const files = readdirSync(DIR).filter((name) => name.endsWith('.yaml') && !['kustomization.yaml', 'secret.example.yaml'].includes(name));
    assert.deepEqual([...kustomization.resources].sort(), files.sort());
  });

  it('what the DaemonSet refers to exists: Secret keys, ConfigMap, service account, volumes; the Services select its pods and port', () => {
    type Container = { name: string; ports?: { name: string }[]; env?: { valueFrom?: { secretKeyRef?: { name: string; key: string } } }[]; envFrom?: { configMapRef?: { name: string } }[]; volumeMounts?: { name: string }[] };
    const daemonSet = one('DaemonSet') as Manifest & {
      spec: { selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: { serviceAccountName: string; containers: Container[]; initContainers: Container[]; volumes: { name: string }[] } } };
    };
    const pod = daemonSet.spec.template;
    assert.deepEqual(daemonSet.spec.selector.matchLabels, Object.fromEntries(Object.entries(pod.metadata.labels).filter(([key]) => key in daemonSet.spec.selector.matchLabels)));
    const secret = one('Secret', 'airlock-secrets') as Manifest & { stringData: Record<string, string> };
    const configMaps = new Set(manifests().filter(({ object }) => object.kind === 'ConfigMap').map(({ object }) => object.metadata.name));
    const volumes = new Set(pod.spec.volumes.map((volume) => volume.name));
    for (const container of [...pod.spec.containers, ...pod.spec.initContainers]) {
      for (const variable of container.env ?? []) {
        const ref = variable.valueFrom?.secretKeyRef;
        if (ref) assert.ok(ref.name === 'airlock-secrets' && ref.key in secret.stringData, `secret key ${ref.name}/${ref.key}`);
      }
      for (const source of container.envFrom ?? []) if (source.configMapRef) assert.ok(configMaps.has(source.configMapRef.name), `ConfigMap ${source.configMapRef.name}`);
      for (const mount of container.volumeMounts ?? []) assert.ok(volumes.has(mount.name), `volume ${mount.name} of ${container.name}`);
    }
    one('ServiceAccount', pod.spec.serviceAccountName);
    const ports = new Set(pod.spec.containers.flatMap((container) => (container.ports ?? []).map((port) => port.name)));
    for (const { object } of manifests().filter(({ object }) => object.kind === 'Service')) {
      const service = object as Manifest & { spec: { selector: Record<string, string>; ports: { targetPort: string }[] } };
      for (const [key, value] of Object.entries(service.spec.selector)) assert.equal(pod.metadata.labels[key], value, `${service.metadata.name} selects the node pods`);
      for (const port of service.spec.ports) assert.ok(ports.has(port.targetPort), `${service.metadata.name} targets port ${port.targetPort}`);
    }
  });

  it('every setting in the ConfigMap and the Secret is one the server reads', () => {
    const sources = ['packages/runtime/src', 'packages/cli/src'].flatMap((dir) => listSources(join(ROOT, dir))).map((file) => readFileSync(file, 'utf8')).join('\n');
    const config = one('ConfigMap', 'airlock-config') as Manifest & { data: Record<string, string> };
    const secret = one('Secret', 'airlock-secrets') as Manifest & { stringData: Record<string, string> };
    // AIRLOCK_STORE_URL is the PostgreSQL store's setting (issue 13), documented as read once it is in.
    for (const key of [...Object.keys(config.data), ...Object.keys(secret.stringData)].filter((key) => key !== 'AIRLOCK_STORE_URL')) {
      assert.ok(sources.includes(`'${key}'`), `${key} is read somewhere in the server`);
    }
  });

  it('names no registry or mirror host: images are plain names, retagged by whoever builds them', () => {
    const text = [DIR, join(DIR, 'monitoring')]
      .flatMap((dir) => readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isFile()).map((entry) => readFileSync(join(dir, entry.name), 'utf8')))
      .join('\n');
    for (const image of text.matchAll(/image:\s*(\S+)/g)) assert.doesNotMatch(image[1]!, /^[^/]*[.:][^/]*\//, `${image[1]} names a registry host`);
    assert.doesNotMatch(text, /https?:\/\/(?!127\.0\.0\.1)[a-z0-9.-]+\.(org|com|io|net|dev)\b/i);
  });
});

function listSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? listSources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : []));
}
