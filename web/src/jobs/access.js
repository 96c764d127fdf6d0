// Where the user may create TrainJobs: asked once per namespace (SelfSubjectAccessReviews, which
// api.js remembers), for the "Create job" button and the create page's namespace choice.
import { useEffect, useState } from 'react';
import { canI } from '../api.js';
import { useCanI, useListWatch } from '../hooks.js';

export const TRAINER_GROUP = 'trainer.kubeflow.org';

export async function creatableNamespaces(namespaces) {
  const allowed = await Promise.all(namespaces.map((namespace) => canI({
    verb: 'create', group: TRAINER_GROUP, resource: 'trainjobs', namespace,
  })));
  return namespaces.filter((_n, i) => allowed[i]);
}

/** The namespaces (of `visible`) the user may create TrainJobs in; null until known. */
export function useCreatableNamespaces(visible) {
  const [namespaces, setNamespaces] = useState(null);
  const key = visible ? visible.namespaces.join(',') : null;
  useEffect(() => {
    if (key === null) return undefined;
    let live = true;
    creatableNamespaces(visible.namespaces).then((n) => live && setNamespaces(n));
    return () => { live = false; };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- key stands for visible's names: a new object with the same names asks nothing again
  }, [key]);
  return namespaces;
}

/**
 * useListWatch(path), asked only when the user may list it (`attrs`: an access review), so that a
 * forbidden list is no failed request in the console; {items, error, loaded, forbidden}.
 */
const NONE = []; // one empty list, so that memos over `items` hold while nothing can be listed

export function useListIfAllowed(path, attrs) {
  const allowed = useCanI(attrs);
  const list = useListWatch(allowed && path ? path : null);
  if (allowed === false) return { items: NONE, error: null, loaded: true, forbidden: true };
  if (allowed === null) return { items: NONE, error: null, loaded: false, forbidden: false };
  return { ...list, forbidden: false };
}
