// The objects of one TrainJob, live. The server speaks HTTP/1.1, so a browser opens at most 6
// connections to it and every watch or followed log holds one: the page watches only the job, its
// pods and its Workload (plus events on the Events tab and the launcher's log on the Logs tab), and
// reads what does not change (runtime, hostfile) once. What RBAC forbids is not asked for (an access
// review first): a refused request would be an error in the browser's console, and says nothing new.
import { useEffect, useState } from 'react';
import { CORE, KUEUE, TRAINER, get, trainjobsPath } from '../api.js';
import { useCanI, useListWatch } from '../hooks.js';
import { LABEL_JOBSET } from '../model.js';
import { workloadOf } from './model.js';

const selector = (k, v) => encodeURIComponent(`${k}=${v}`);

/** The TrainJob NS/NAME, watched: {job (null until found or when absent), loaded, error}. */
export function useJob(namespace, name) {
  const { items, loaded, error } = useListWatch(`${trainjobsPath(namespace)}?fieldSelector=${selector('metadata.name', name)}`);
  return { job: items[0] || null, loaded, error };
}

export function usePods(namespace, name) {
  return useListWatch(`${CORE}/namespaces/${namespace}/pods?labelSelector=${selector(LABEL_JOBSET, name)}`);
}

/** The job's Workload (Kueue labels it with the job's uid; ownership decides). */
export function useWorkload(job) {
  const may = useCanI({ verb: 'list', group: 'kueue.x-k8s.io', resource: 'workloads', namespace: job ? job.metadata.namespace : '' });
  const path = job && may ? `${KUEUE}/namespaces/${job.metadata.namespace}/workloads?labelSelector=${selector('kueue.x-k8s.io/job-uid', job.metadata.uid)}` : null;
  const { items } = useListWatch(path);
  return job ? workloadOf(job, items) : null;
}

/** One GET, repeated when `key` changes; keeps the last answer: {data, error}. */
export function useGet(path, key = '') {
  const [state, setState] = useState({ data: null, error: null });
  useEffect(() => {
    if (!path) return undefined;
    let live = true;
    get(path).then((data) => live && setState({ data, error: null }), (error) => live && setState((s) => ({ ...s, error })));
    return () => { live = false; };
  }, [path, key]);
  return state;
}

/** The runtime the job refers to (read once: jobs keep theirs), or null. */
export function useRuntime(job) {
  const ref = (job && job.spec.runtimeRef) || {};
  const own = ref.kind === 'TrainingRuntime';
  const namespace = own ? job.metadata.namespace : '';
  const resource = own ? 'trainingruntimes' : 'clustertrainingruntimes';
  const may = useCanI({ verb: 'get', group: 'trainer.kubeflow.org', resource, namespace, name: ref.name || '' });
  const path = ref.name && may ? `${TRAINER}${own ? `/namespaces/${namespace}` : ''}/${resource}/${ref.name}` : null;
  return useGet(path).data;
}

/** The hostfile mpirun reads (`NAME-mpi-hostfile`): made just before the pods, so read once there are pods
 * (asking earlier would log a 404 in the console), again when their number changes. */
export function useHostfile(namespace, name, podCount) {
  const may = useCanI({ verb: 'get', resource: 'configmaps', namespace, name: `${name}-mpi-hostfile` });
  const path = podCount && may ? `${CORE}/namespaces/${namespace}/configmaps/${name}-mpi-hostfile` : null;
  const { data } = useGet(path, String(podCount));
  return data && data.data ? data.data.hostfile || '' : '';
}
