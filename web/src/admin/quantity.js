// Kubernetes quantities ("500m", "16Gi", "9018n") as numbers, and back as short text for people:
// CPU in cores, memory in binary bytes, devices (GPUs) as counts.
import { GPU } from '../model.js';

const SUFFIX = {
  n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};
const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;

/** The quantity's value (cores, bytes, count); 0 for what is absent or unreadable. */
export function parseQuantity(q) {
  if (q === null || q === undefined || q === '') return 0;
  if (typeof q === 'number') return q;
  const m = QUANTITY.exec(String(q).trim());
  if (!m) return 0;
  const n = Number(m[1]);
  if (m[2]) return n * 10 ** Number(m[2].slice(1));
  return m[3] ? n * SUFFIX[m[3]] : n;
}

/** The resources the pages show, in this order; anything else follows by name. */
export const MAIN_RESOURCES = ['cpu', 'memory', GPU];

export const resourceOrder = (a, b) => {
  const ia = MAIN_RESOURCES.indexOf(a);
  const ib = MAIN_RESOURCES.indexOf(b);
  if (ia >= 0 || ib >= 0) return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib);
  return a.localeCompare(b);
};

/** "CPU", "Memory", "GPUs", or the resource's own name. */
export function resourceLabel(resource) {
  if (resource === 'cpu') return 'CPU';
  if (resource === 'memory') return 'Memory';
  if (resource === GPU) return 'GPUs';
  return resource;
}

const round = (v, digits = 2) => {
  const f = 10 ** digits;
  return String(Math.round(v * f) / f);
};

/** Bytes in the largest binary unit that keeps the number at 1 or more: "512 MiB", "6 GiB". */
export function formatBytes(bytes) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = bytes;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return `${round(v, v >= 100 ? 0 : 1)} ${units[i]}`;
}

/** A value of `resource` with its unit: "1.5 cores", "6 GiB", "2 GPUs", "3". */
export function formatAmount(resource, value) {
  if (value === Infinity) return 'unlimited';
  if (resource === 'cpu') return `${round(value)} ${value === 1 ? 'core' : 'cores'}`;
  if (resource === 'memory' || resource.startsWith('hugepages-') || resource === 'ephemeral-storage') return formatBytes(value);
  if (resource === GPU) return `${round(value)} ${value === 1 ? 'GPU' : 'GPUs'}`;
  return round(value);
}

/** The bare number for a table cell whose header names the unit (cores, GiB, GPUs). */
export function formatNumber(resource, value) {
  if (resource === 'memory') return round(value / 2 ** 30, 1);
  return round(value);
}

/** What a container asks for of each resource: its request, else its limit (kube's defaulting). */
export function containerRequests(container) {
  const res = container.resources || {};
  const out = {};
  for (const [k, v] of Object.entries(res.limits || {})) out[k] = parseQuantity(v);
  for (const [k, v] of Object.entries(res.requests || {})) out[k] = parseQuantity(v);
  return out;
}

/** A pod's requests: its containers' sum, or its largest init container where that is more (kube's rule). */
export function podRequests(pod) {
  const spec = pod.spec || {};
  const sum = {};
  for (const c of spec.containers || []) {
    for (const [k, v] of Object.entries(containerRequests(c))) sum[k] = (sum[k] || 0) + v;
  }
  for (const c of spec.initContainers || []) {
    for (const [k, v] of Object.entries(containerRequests(c))) sum[k] = Math.max(sum[k] || 0, v);
  }
  return sum;
}

export const addInto = (total, amounts) => {
  for (const [k, v] of Object.entries(amounts)) total[k] = (total[k] || 0) + v;
  return total;
};
