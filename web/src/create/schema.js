// Client-side checks of TrainJob YAML, for the editor: YAML syntax, then the TrainJob schema the
// server serves (OpenAPI v3, $refs inlined, validated by @cfworker/json-schema, which needs no eval),
// each problem placed at its text in the YAML. The server's dry run says the rest.
import { Validator } from '@cfworker/json-schema';
import { isMap, isSeq, parseDocument } from 'yaml';
import { get } from '../api.js';

const OPENAPI = '/openapi/v3/apis/trainer.kubeflow.org/v1alpha1';
let validator = null;

/** The TrainJob schema's validator (fetched once per page); rejects when the server gives none. */
export function trainJobValidator() {
  if (!validator) {
    validator = get(OPENAPI).then(build);
    validator.catch(() => { validator = null; });
  }
  return validator;
}

export function build(doc) {
  const schemas = (doc.components && doc.components.schemas) || {};
  const name = Object.keys(schemas).find((k) => (schemas[k]['x-kubernetes-group-version-kind'] || [])
    .some((g) => g.kind === 'TrainJob'));
  if (!name) throw new Error(`${OPENAPI} has no TrainJob schema`);
  return new Validator(inline(schemas[name], schemas, []), '7', false);
}

// Kubernetes' OpenAPI calls quantities and IntOrStrings strings; the API server takes numbers for
// them too (cpu: 2), so the editor must not call those wrong.
const takesNumbers = (s) => s.type === 'string'
  && (s.format === 'int-or-string' || /^Quantity is a fixed-point/.test(s.description || ''));

/** `schema` with every $ref replaced by what it names (a ref back to an ancestor: anything). */
function inline(schema, schemas, trail) {
  if (Array.isArray(schema)) return schema.map((s) => inline(s, schemas, trail));
  if (!schema || typeof schema !== 'object') return schema;
  if (schema.$ref) {
    const target = schema.$ref.replace('#/components/schemas/', '');
    return trail.includes(target) ? {} : inline(schemas[target] || {}, schemas, [...trail, target]);
  }
  if (takesNumbers(schema)) return { anyOf: [{ type: 'integer' }, { type: 'number' }, { type: 'string' }] };
  const out = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'description' || k.startsWith('x-')) continue;
    // keys of `properties` are field names, not keywords: keep them all
    out[k] = k === 'properties' ? Object.fromEntries(Object.entries(v).map(([p, s]) => [p, inline(s, schemas, trail)]))
      : inline(v, schemas, trail);
  }
  return out;
}

// Keywords that only repeat, one level up, what a deeper error says.
const WRAPPERS = new Set(['properties', 'items', 'allOf', 'additionalProperties', '$ref', 'anyOf', 'oneOf']);

const pointerPath = (pointer) => pointer.replace(/^#/, '').split('/').slice(1)
  .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')).map((s) => (/^\d+$/.test(s) ? Number(s) : s));

/** Schema errors of `value`: [{path: [key or index], message}], the deepest of each branch only. */
export function schemaErrors(v, value) {
  const errors = v.validate(value).errors;
  const kept = errors.filter((e) => !(WRAPPERS.has(e.keyword)
    && errors.some((o) => o !== e && o.instanceLocation.startsWith(e.instanceLocation) && !WRAPPERS.has(o.keyword))));
  const seen = new Set();
  return kept.filter((e) => !seen.has(e.instanceLocation + e.error) && seen.add(e.instanceLocation + e.error))
    .map((e) => ({ path: pointerPath(e.instanceLocation), message: plain(e.error) }));
}

// The validator's sentences, as a person would say them.
const plain = (error) => error
  .replace(/^Instance type "(\w+)" is invalid\. Expected "(\w+)"\.$/, 'must be of type $2, not $1')
  .replace(/^Instance does not have required property "([^"]+)"\.$/, 'the required field "$1" is missing')
  .replace(/^Instance does not match any subschemas of anyOf\.$/, 'has a value of the wrong type');

/** A Kubernetes field path (spec.trainer.env[0].name, ...limits[nvidia.com/gpu]) as keys and indexes. */
export function fieldPath(field) {
  const out = [];
  for (const m of field.matchAll(/\[([^\]]*)\]|([^.[\]]+)/g)) {
    if (m[1] !== undefined) out.push(/^\d+$/.test(m[1]) ? Number(m[1]) : m[1]);
    else out.push(m[2]);
  }
  return out;
}

/** The text range of `path` in the parsed YAML: the key and value, else the nearest ancestor's first line. */
export function locate(doc, text, path) {
  let node = doc.contents;
  let range = node && node.range ? [node.range[0], node.range[1]] : [0, 0];
  for (const key of path) {
    let next = null;
    if (isMap(node)) {
      const pair = node.items.find((p) => p.key && (p.key.value === key || String(p.key.value) === String(key)));
      if (pair) {
        next = pair.value;
        const end = (pair.value && pair.value.range) ? pair.value.range[1] : pair.key.range[1];
        range = [pair.key.range[0], end];
      }
    } else if (isSeq(node) && typeof key === 'number' && node.items[key]) {
      next = node.items[key];
      range = [next.range[0], next.range[1]];
    }
    if (!next) break;
    node = next;
  }
  const lineEnd = text.indexOf('\n', range[0]);
  const to = lineEnd >= 0 && lineEnd < range[1] ? lineEnd : range[1];
  return [range[0], Math.max(to, range[0])];
}

/** {doc, value, problems}: the parsed YAML, its value (null if it does not parse) and syntax problems. */
export function parseYaml(text) {
  const doc = parseDocument(text, { prettyErrors: false });
  const problems = doc.errors.map((e) => ({ from: e.pos[0], to: Math.max(e.pos[1], e.pos[0]), message: e.message, source: 'YAML' }));
  let value = null;
  if (!problems.length) {
    value = doc.toJS();
    if (!value || typeof value !== 'object' || Array.isArray(value)) {
      problems.push({ from: 0, to: 0, message: 'The YAML must be one TrainJob: a mapping with apiVersion, kind, metadata and spec', source: 'YAML' });
      value = null;
    }
  }
  return { doc, value, problems };
}
