// #/docs/FILE.md#ANCHOR: the project's own docs, which every help link of the page opens, rendered from
// the Markdown the server serves (/dashboard/docs/). markdown-it with `html: false` escapes any HTML in
// a document, so nothing in it can run; headings get GitHub's anchors, so links to sections work.
import { useEffect, useRef, useState } from 'react';
import MarkdownIt from 'markdown-it';
import { Alert, Breadcrumb, BreadcrumbItem, PageSection, Spinner } from '@patternfly/react-core';
import { DOCS } from '../model.js';

const md = new MarkdownIt({ html: false, linkify: true });

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes. */
export const slug = (text) => text.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');

/** Links between docs stay in the dashboard; images load from the server; the rest opens elsewhere. */
function rewire(root, file) {
  const dir = file.includes('/') ? file.slice(0, file.lastIndexOf('/') + 1) : '';
  const seen = new Map();
  root.querySelectorAll('h1, h2, h3, h4').forEach((h) => {
    const base = slug(h.textContent);
    const n = seen.get(base) || 0;
    seen.set(base, n + 1);
    h.id = n ? `${base}-${n}` : base;
  });
  root.querySelectorAll('a[href]').forEach((a) => {
    const href = a.getAttribute('href');
    if (/^[a-z]+:/i.test(href)) { a.target = '_blank'; a.rel = 'noreferrer'; return; }
    if (href.startsWith('#')) { a.setAttribute('href', `${DOCS}/${file}${href}`); return; }
    const target = href.replace(/^\.\//, '').replace(/^docs\//, '');
    a.setAttribute('href', target.endsWith('.md') || target.includes('.md#') ? `${DOCS}/${dir}${target}` : `/dashboard/docs/${dir}${target}`);
  });
  root.querySelectorAll('img[src]').forEach((img) => {
    const src = img.getAttribute('src');
    if (!/^[a-z]+:/i.test(src)) img.setAttribute('src', `/dashboard/docs/${dir}${src.replace(/^docs\//, '')}`);
  });
}

export default function DocPage({ path }) {
  const [file, anchor = ''] = path.split('#');
  const [state, setState] = useState({ html: '', error: null, loaded: false });
  const ref = useRef(null);
  useEffect(() => {
    let live = true;
    setState({ html: '', error: null, loaded: false });
    fetch(`/dashboard/docs/${file}`, { cache: 'no-cache' })
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error(`${file}: the server answered ${r.status}`))))
      .then((text) => live && setState({ html: md.render(text), error: null, loaded: true }),
        (error) => live && setState({ html: '', error, loaded: true }));
    return () => { live = false; };
  }, [file]);
  useEffect(() => {
    if (!ref.current || !state.html) return;
    rewire(ref.current, file);
    const target = anchor && document.getElementById(anchor);
    if (target) target.scrollIntoView();
  }, [state.html, file, anchor]);
  return (
    <PageSection>
      <Breadcrumb className="pf-v6-u-mb-md">
        <BreadcrumbItem>Docs</BreadcrumbItem>
        <BreadcrumbItem isActive>{file}</BreadcrumbItem>
      </Breadcrumb>
      {!state.loaded && <Spinner aria-label="Loading the document" />}
      {state.error && <Alert variant="danger" isInline title={state.error.message} />}
      {/* markdown-it with html: false: the document's own HTML is escaped, so this holds no markup of its author's */}
      <div className="pf-v6-c-content mpijob-doc" ref={ref} dangerouslySetInnerHTML={{ __html: state.html }} />
    </PageSection>
  );
}
