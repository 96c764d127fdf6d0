// The live data of the jobs list: the TrainJobs the user may list (cluster-wide when allowed, else one
// watch per namespace) and the runtimes they refer to (for their type and size).
import { useEffect, useMemo, useState } from 'react';
import { canI, get, KUEUE, TRAINER, trainjobsPath, visibleNamespaces } from '../api.js';
import { useListsWatch } from '../hooks.js';
import { workloadsByJob } from '../model.js';
import { TRAINER_GROUP, useListIfAllowed } from './access.js';

/** {all, namespaces} from the server, or null while it answers; {error} too when it failed. */
export function useVisibleNamespaces() {
  const [visible, setVisible] = useState(null);
  useEffect(() => {
    let live = true;
    visibleNamespaces().then((v) => live && setVisible(v),
      (error) => live && setVisible({ all: false, namespaces: [], error }));
    return () => { live = false; };
  }, []);
  return visible;
}

const runtimesPath = (namespace) => (namespace ? `${TRAINER}/namespaces/${namespace}/trainingruntimes` : `${TRAINER}/trainingruntimes`);

// List items come without kind (as from kube-apiserver); runtimeOf() matches on it.
const withKind = (kind) => (o) => (o.kind ? o : { ...o, kind });

const KUEUE_GROUP = 'kueue.x-k8s.io';

/**
 * The items at `paths`, listed once: namespaced runtimes change rarely, and a watch each would hold one
 * of the 6 connections a browser opens to the server (HTTP/1.1) for every namespace the user has.
 */
function useListsOnce(paths) {
  const key = paths.join('\n');
  const [items, setItems] = useState([]);
  useEffect(() => {
    let live = true;
    Promise.all(paths.map((p) => get(p).then((l) => l.items || [], () => [])))
      .then((lists) => live && setItems(lists.flat()));
    return () => { live = false; };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- key stands for paths: a new array of the same URLs lists nothing again
  }, [key]);
  return { items };
}

/**
 * The Workloads of the jobs, by job uid, where the user may list them (Kueue's batch users may;
 * `edit` alone may not): they carry the scheduler's why-waiting sentence.
 */
function useWorkloads(visible) {
  const [paths, setPaths] = useState([]);
  const key = `${visible.all}:${visible.namespaces.join(',')}`;
  useEffect(() => {
    let live = true;
    const review = (namespace) => canI({ verb: 'list', group: KUEUE_GROUP, resource: 'workloads', namespace });
    const wanted = visible.all ? [''] : visible.namespaces;
    Promise.all(wanted.map(review)).then((allowed) => live && setPaths(wanted.filter((_n, i) => allowed[i])
      .map((ns) => (ns ? `${KUEUE}/namespaces/${ns}/workloads` : `${KUEUE}/workloads`))));
    return () => { live = false; };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- key stands for visible: a new object with the same namespaces asks nothing again
  }, [key]);
  const workloads = useListsWatch(paths);
  return useMemo(() => workloadsByJob(workloads.items), [workloads.items]);
}

/**
 * {jobs, runtimes, workloads, loaded, error} for the namespaces `visible` names. Call it only once `visible` is
 * known: useListsWatch reports its first list as loaded, so the paths must not change after mounting.
 */
export function useJobs(visible) {
  const paths = visible.all ? [trainjobsPath('')] : visible.namespaces.map(trainjobsPath);
  const runtimePaths = visible.all ? [runtimesPath('')] : visible.namespaces.map(runtimesPath);
  const jobs = useListsWatch(paths);
  const cluster = useListIfAllowed(`${TRAINER}/clustertrainingruntimes`,
    { verb: 'list', group: TRAINER_GROUP, resource: 'clustertrainingruntimes' });
  const namespaced = useListsOnce(runtimePaths);
  const runtimes = useMemo(() => [
    ...cluster.items.map(withKind('ClusterTrainingRuntime')), ...namespaced.items.map(withKind('TrainingRuntime')),
  ], [cluster.items, namespaced.items]);
  const workloads = useWorkloads(visible);
  return { jobs: jobs.items, runtimes, workloads, loaded: jobs.loaded, error: visible.error || jobs.error };
}
