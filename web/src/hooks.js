// React hooks over api.js: live lists, access reviews, a ticking clock.
import { useEffect, useState } from 'react';
import { canI, listAndWatch } from './api.js';

/** The objects at `path` (a list URL), kept current by a watch: {items, error, loaded}. null path: none. */
export function useListWatch(path) {
  const [state, setState] = useState({ items: [], error: null, loaded: false });
  useEffect(() => {
    if (!path) { setState({ items: [], error: null, loaded: true }); return undefined; }
    setState({ items: [], error: null, loaded: false });
    return listAndWatch(path,
      (items) => setState({ items: [...items.values()], error: null, loaded: true }),
      (error) => error && setState((s) => ({ ...s, error, loaded: true })));
  }, [path]);
  return state;
}

/** Several list URLs followed at once (one per namespace), merged: {items, error, loaded}. */
export function useListsWatch(paths) {
  const key = paths.join('\n');
  const [state, setState] = useState({ items: [], error: null, loaded: false });
  useEffect(() => {
    setState({ items: [], error: null, loaded: false }); // new paths: nothing of the old ones is shown as theirs
    const lists = paths.map(() => null);
    const errors = paths.map(() => null);
    const publish = () => setState({
      items: lists.flatMap((m) => (m ? [...m.values()] : [])),
      error: errors.find(Boolean) || null,
      loaded: lists.every((m, i) => m !== null || errors[i] !== null),
    });
    if (!paths.length) { setState({ items: [], error: null, loaded: true }); return undefined; }
    const stops = paths.map((p, i) => listAndWatch(p,
      (items) => { lists[i] = items; errors[i] = null; publish(); },
      (error) => { errors[i] = error; if (error) publish(); }));
    return () => stops.forEach((stop) => stop());
    // eslint-disable-next-line react-hooks/exhaustive-deps -- key stands for paths: a new array of the same URLs keeps the watches
  }, [key]);
  return state;
}

/** Whether the user may do it (SelfSubjectAccessReview); null until the server answered. */
export function useCanI(attrs) {
  const key = JSON.stringify(attrs);
  const [allowed, setAllowed] = useState(null);
  useEffect(() => {
    let live = true;
    canI(attrs).then((a) => live && setAllowed(a));
    return () => { live = false; };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- key stands for attrs: a new object with the same fields asks nothing again
  }, [key]);
  return allowed;
}

/** The current time, re-read every `ms`, for durations that grow while a page is open. */
export function useNow(ms = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
