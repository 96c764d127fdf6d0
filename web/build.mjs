// Builds the dashboard into dist/ (served by the local cluster at /dashboard/): `npm ci && npm run build`,
// or `make dashboard` from the repository's root. The output depends only on package-lock.json and src/:
// no timestamps, content-hashed chunk and asset names, so two builds of one commit are byte-identical.
import { build } from 'esbuild';
import { cpSync, mkdirSync, rmSync } from 'node:fs';

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

await build({
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
  logLevel: 'warning',
});
cpSync('src/index.html', `${outdir}/index.html`);
