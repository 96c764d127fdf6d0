// Builds the dashboard into dist/ (served by the local cluster at /dashboard/): `npm ci && npm run build`,
// or `make dashboard` from the repository's root. The output depends only on package-lock.json and src/:
// no timestamps, content-hashed chunk and asset names, so two builds of one commit are byte-identical.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';

const outdir = process.env.OUTDIR || 'dist'; // OUTDIR: the reproducibility test builds elsewhere
rmSync(outdir, { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });
// PatternFly's React components each import their own stylesheet; the whole of PatternFly's CSS is
// one stylesheet of its own (src/style.css) instead: JavaScript imports no CSS, so no chunk carries a copy.
const oneStylesheet = {
  name: 'one-stylesheet',
  setup(b) {
    b.onResolve({ filter: /\.css$/ }, (args) => (args.kind === 'import-statement' && `${args.importer} ${args.path}`.includes('@patternfly/react-styles/css/')
      ? { path: args.path, namespace: 'empty-css' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'empty-css' }, () => ({ contents: '', loader: 'empty' }));
  },
};

const result = await build({
  entryPoints: { app: 'src/main.jsx', style: 'src/style.css' },
  bundle: true,
  splitting: true, // the editor and the charts load when a page first needs them
  format: 'esm',
  minify: true,
  target: ['chrome110', 'firefox115', 'safari16'],
  jsx: 'automatic',
  outdir,
  entryNames: '[name]',
  chunkNames: 'chunks/[name]-[hash]',
  assetNames: 'assets/[name]-[hash]',
  loader: { '.woff': 'file', '.woff2': 'file', '.ttf': 'file', '.eot': 'file', '.svg': 'file', '.png': 'file', '.jpg': 'file', '.gif': 'file' },
  define: { 'process.env.NODE_ENV': '"production"' },
  legalComments: 'none',
  plugins: [oneStylesheet],
  metafile: true,
  logLevel: 'warning',
});

// Every chunk the first page imports, named in index.html (modulepreload): the browser fetches them all
// while it parses the page, instead of learning of each only once its importer has arrived.
const outputs = result.metafile.outputs;
const eager = new Set();
const walk = (file) => {
  for (const i of outputs[file].imports) {
    if (i.kind === 'import-statement' && !eager.has(i.path)) { eager.add(i.path); walk(i.path); }
  }
};
const [app] = Object.entries(outputs).find(([, o]) => o.entryPoint === 'src/main.jsx');
walk(app);
const preloads = [...eager].sort().map((f) => `  <link rel="modulepreload" href="${relative(dirname(app), f)}">`).join('\n');
writeFileSync(`${outdir}/index.html`, readFileSync('src/index.html', 'utf8').replace('  <!-- modulepreload -->', preloads));
