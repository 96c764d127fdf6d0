// The server's verdict on the job being written: a dry-run create (?dryRun=All) after each pause in
// typing, and its field errors sorted to the fields of the page that show them.
import { useEffect, useState } from 'react';
import { create, trainjobsPath } from '../api.js';

const DEBOUNCE_MS = 300;

/**
 * {state: 'idle'|'checking'|'ok'|'error', error}: the last dry run of `job` in `namespace`. A newer
 * change supersedes an answer still on its way. `job` null: nothing to check (e.g. YAML that does not parse).
 */
export function useDryRun(job, namespace, enabled) {
  const key = job && enabled && namespace ? JSON.stringify(job) : '';
  const [result, setResult] = useState({ state: 'idle', error: null, key: '' });
  useEffect(() => {
    if (!key) { setResult({ state: 'idle', error: null, key: '' }); return undefined; }
    let live = true;
    setResult((r) => ({ ...r, state: 'checking' }));
    const timer = setTimeout(() => {
      create(trainjobsPath(namespace), JSON.parse(key), { dryRun: true })
        .then(() => live && setResult({ state: 'ok', error: null, key }))
        .catch((error) => live && setResult({ state: 'error', error, key }));
    }, DEBOUNCE_MS);
    return () => { live = false; clearTimeout(timer); };
  }, [key, namespace]);
  return result;
}

const under = (field, path) => field === path || field.startsWith(`${path}.`) || field.startsWith(`${path}[`);

/**
 * The causes of `error` by the field path (of `paths`) that shows each: the longest path a cause's
 * field is, or is under. {at: {path: [{field, message}]}, rest: [message]}: `rest` has the errors no
 * field shows (a quota refusal, a field the page has no input for), with their field named.
 */
export function sortCauses(error, paths) {
  const at = {};
  const rest = [];
  if (!error) return { at, rest };
  const causes = error.causes || [];
  if (!causes.length) return { at, rest: [error.message] };
  for (const c of causes) {
    const field = c.field || '';
    const path = paths.filter((p) => under(field, p)).sort((a, b) => b.length - a.length)[0];
    if (path) (at[path] = at[path] || []).push({ field, message: c.message || c.reason });
    else rest.push(field ? `${field}: ${c.message || c.reason}` : (c.message || c.reason));
  }
  return { at, rest };
}
