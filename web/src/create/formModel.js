// The create form's values and the TrainJob they stand for, both ways: form → TrainJob always;
// TrainJob → form when the form covers every field the job sets (else the YAML editor takes it).
import { GPU, LABEL_PRIORITY, LABEL_QUEUE } from '../model.js';

export const API_VERSION = 'trainer.kubeflow.org/v1alpha1';
export const CLUSTER_RUNTIME = 'ClusterTrainingRuntime';
export const DEFAULT_RUNTIME = `${CLUSTER_RUNTIME}/mpi-distributed`;
const TRAINER_GROUP = 'trainer.kubeflow.org';
const DEFAULT_MANAGER = 'trainer.kubeflow.org/trainjob-controller';

export const emptyForm = () => ({
  name: '', namespace: '', runtime: DEFAULT_RUNTIME, image: '', command: '', numNodes: '', numProcPerNode: '',
  gpu: '', cpu: '', memory: '', env: [], queue: '', priority: '',
});

/** The resources a node may ask for: [form key, resource name]. */
export const RESOURCES = [['gpu', GPU], ['cpu', 'cpu'], ['memory', 'memory']];

/** One argument per line; blank lines are dropped and each line is trimmed. */
export const commandArgs = (text) => text.split('\n').map((l) => l.trim()).filter(Boolean);

// A whole number as a number; anything else as typed, so that the server names the mistake.
const intOrRaw = (v) => (/^-?\d+$/.test(v.trim()) ? Number(v.trim()) : v.trim());

/** Which env entry of the TrainJob each form row became (-1: a blank row, left out). */
export function envIndexes(rows) {
  let n = 0;
  return rows.map((r) => (r.name.trim() || r.value ? n++ : -1));
}

export function formToJob(form) {
  const [kind, name] = form.runtime.split('/');
  const labels = {};
  if (form.queue) labels[LABEL_QUEUE] = form.queue;
  if (form.priority) labels[LABEL_PRIORITY] = form.priority;
  const trainer = {};
  if (form.image.trim()) trainer.image = form.image.trim();
  const command = commandArgs(form.command);
  if (command.length) trainer.command = command;
  if (form.numNodes.trim()) trainer.numNodes = intOrRaw(form.numNodes);
  if (form.numProcPerNode.trim()) trainer.numProcPerNode = intOrRaw(form.numProcPerNode);
  const limits = {};
  for (const [key, resource] of RESOURCES) if (form[key].trim()) limits[resource] = form[key].trim();
  if (Object.keys(limits).length) trainer.resourcesPerNode = { limits };
  const env = form.env.filter((r) => r.name.trim() || r.value).map((r) => ({ name: r.name.trim(), value: r.value }));
  if (env.length) trainer.env = env;
  return {
    apiVersion: API_VERSION,
    kind: 'TrainJob',
    metadata: { name: form.name.trim(), ...(form.namespace ? { namespace: form.namespace } : {}), ...(form.queue || form.priority ? { labels } : {}) },
    spec: {
      runtimeRef: kind === CLUSTER_RUNTIME ? { name } : { name, kind },
      ...(Object.keys(trainer).length ? { trainer } : {}),
    },
  };
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const plainArg = (a) => typeof a === 'string' && a !== '' && !a.includes('\n') && a === a.trim();

/**
 * The form for `job`, and the fields the form cannot show (`uncovered`: their paths). With any
 * uncovered field the job belongs in the YAML editor, where nothing is lost.
 */
export function jobToForm(job) {
  const form = emptyForm();
  const uncovered = [];
  if (!isObject(job)) return { form, uncovered: ['(not an object)'] };
  const other = (obj, known, where) => {
    for (const key of Object.keys(obj || {})) if (!known.includes(key)) uncovered.push(`${where}.${key}`);
  };
  other(job, ['apiVersion', 'kind', 'metadata', 'spec'], '');
  if (job.apiVersion !== API_VERSION || job.kind !== 'TrainJob') uncovered.push('apiVersion/kind');
  const meta = isObject(job.metadata) ? job.metadata : {};
  other(meta, ['name', 'namespace', 'labels'], 'metadata');
  form.name = typeof meta.name === 'string' ? meta.name : '';
  form.namespace = typeof meta.namespace === 'string' ? meta.namespace : '';
  const labels = isObject(meta.labels) ? meta.labels : {};
  other(labels, [LABEL_QUEUE, LABEL_PRIORITY], 'metadata.labels');
  form.queue = labels[LABEL_QUEUE] || '';
  form.priority = labels[LABEL_PRIORITY] || '';

  const spec = isObject(job.spec) ? job.spec : {};
  other(spec, ['runtimeRef', 'trainer', 'managedBy', 'suspend'], 'spec');
  if (spec.managedBy !== undefined && spec.managedBy !== DEFAULT_MANAGER) uncovered.push('spec.managedBy');
  if (spec.suspend) uncovered.push('spec.suspend');
  const ref = isObject(spec.runtimeRef) ? spec.runtimeRef : {};
  other(ref, ['name', 'kind', 'apiGroup'], 'spec.runtimeRef');
  if (ref.apiGroup !== undefined && ref.apiGroup !== TRAINER_GROUP) uncovered.push('spec.runtimeRef.apiGroup');
  form.runtime = `${ref.kind || CLUSTER_RUNTIME}/${ref.name || ''}`;

  const t = isObject(spec.trainer) ? spec.trainer : {};
  other(t, ['image', 'command', 'numNodes', 'numProcPerNode', 'resourcesPerNode', 'env'], 'spec.trainer');
  form.image = typeof t.image === 'string' ? t.image : '';
  if (t.command !== undefined) {
    if (Array.isArray(t.command) && t.command.every(plainArg)) form.command = t.command.join('\n');
    else uncovered.push('spec.trainer.command (an argument spans lines, is empty or has spaces at its ends)');
  }
  for (const key of ['numNodes', 'numProcPerNode']) {
    if (t[key] === undefined) continue;
    if (Number.isInteger(t[key])) form[key] = String(t[key]);
    else uncovered.push(`spec.trainer.${key}`);
  }
  const r = isObject(t.resourcesPerNode) ? t.resourcesPerNode : {};
  other(r, ['limits'], 'spec.trainer.resourcesPerNode');
  const limits = isObject(r.limits) ? r.limits : {};
  other(limits, RESOURCES.map(([, name]) => name), 'spec.trainer.resourcesPerNode.limits');
  for (const [key, name] of RESOURCES) if (limits[name] !== undefined) form[key] = String(limits[name]);
  if (t.env !== undefined) {
    const simple = Array.isArray(t.env) && t.env.every((e) => isObject(e) && typeof e.name === 'string'
      && Object.keys(e).every((k) => k === 'name' || (k === 'value' && typeof e.value === 'string')));
    if (simple) form.env = t.env.map((e) => ({ name: e.name, value: e.value || '' }));
    else uncovered.push('spec.trainer.env (valueFrom)');
  }
  return { form, uncovered };
}

const SERVER_ANNOTATION = /^(mpijob\.io\/|kubectl\.kubernetes\.io\/last-applied-configuration$)/;

/** A job as its author would have written it: without what the server added and without its state. */
export function cleanForClone(job, name) {
  const meta = job.metadata || {};
  const annotations = Object.fromEntries(Object.entries(meta.annotations || {}).filter(([k]) => !SERVER_ANNOTATION.test(k)));
  const spec = JSON.parse(JSON.stringify(job.spec || {}));
  if (spec.managedBy === DEFAULT_MANAGER) delete spec.managedBy;
  delete spec.suspend; // a clone is submitted to run
  if (spec.runtimeRef) {
    if (spec.runtimeRef.apiGroup === TRAINER_GROUP) delete spec.runtimeRef.apiGroup;
    if (spec.runtimeRef.kind === CLUSTER_RUNTIME) delete spec.runtimeRef.kind;
  }
  return {
    apiVersion: job.apiVersion || API_VERSION,
    kind: 'TrainJob',
    metadata: {
      name, namespace: meta.namespace,
      ...(meta.labels && Object.keys(meta.labels).length ? { labels: { ...meta.labels } } : {}),
      ...(Object.keys(annotations).length ? { annotations } : {}),
    },
    spec,
  };
}

/**
 * NAME-2, NAME-3, ...: the first that is not `taken`, within 63 characters. A trailing number stays
 * (resnet-50 → resnet-50-2): it may be part of the name.
 */
export function nextName(name, taken) {
  const base = name;
  for (let i = 2; ; i += 1) {
    const suffix = `-${i}`;
    const candidate = base.slice(0, 63 - suffix.length).replace(/-+$/, '') + suffix;
    if (!taken.has(candidate)) return candidate;
  }
}
