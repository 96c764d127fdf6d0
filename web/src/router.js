// Hash routes (#/jobs, #/jobs/NS/NAME/TAB, #/create, #/admin/...): the page is one URL under
// /dashboard/, so its assets load from one place and a reload keeps the view.
import { useEffect, useState } from 'react';

export function parseRoute(hash) {
  const parts = (hash.replace(/^#\/?/, '') || 'jobs').split('/').map(decodeURIComponent);
  const [page = 'jobs', ...rest] = parts;
  const [path, query = ''] = (hash.split('?')[1] !== undefined) ? [page, hash.split('?')[1]] : [page, ''];
  return { page: path.split('?')[0], rest: rest.map((r) => r.split('?')[0]), query: new URLSearchParams(query) };
}

export function useRoute() {
  const [route, setRoute] = useState(parseRoute(window.location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

export const href = (...parts) => `#/${parts.map(encodeURIComponent).join('/')}`;
export const navigate = (...parts) => { window.location.hash = href(...parts); };
