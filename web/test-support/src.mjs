// The tests' way into src/: its .js files are ES modules that esbuild bundles, but package.json declares
// no "type" (declaring "module" changes esbuild's CommonJS interop, so the bundle), and plain Node
// would read them as CommonJS. A load hook says they are modules. It lives outside test/ because
// `node --test test/` runs every .mjs file under test/ as a test file.
import { register } from 'node:module';

const SRC = new URL('../src/', import.meta.url).href;

const HOOK = `
import { readFile } from 'node:fs/promises';
export async function load(url, context, nextLoad) {
  if (url.startsWith(${JSON.stringify(SRC)}) && url.endsWith('.js')) {
    return { format: 'module', source: await readFile(new URL(url)), shortCircuit: true };
  }
  return nextLoad(url, context);
}`;

register(`data:text/javascript,${encodeURIComponent(HOOK)}`);

/** The module at `path` under src/ ('model.js', 'details/model.js'). */
export const src = (path) => import(new URL(path, SRC).href);
