// What the create form offers: runtimes (cluster-wide and the namespace's), the namespace's
// LocalQueues and the WorkloadPriorityClasses, each kept current by a watch.
import { useMemo } from 'react';
import { KUEUE, TRAINER } from '../api.js';
import { TRAINER_GROUP, useListIfAllowed } from '../jobs/access.js';
import { LABEL_FRAMEWORK } from '../model.js';
import { CLUSTER_RUNTIME } from './formModel.js';

const describe = (kind) => (r) => {
  const framework = (r.metadata.labels || {})[LABEL_FRAMEWORK];
  const scope = kind === CLUSTER_RUNTIME ? 'cluster' : 'namespace';
  return { key: `${kind}/${r.metadata.name}`, label: `${r.metadata.name}${framework ? ` (${framework}, ${scope})` : ` (${scope})`}`, runtime: r };
};

const KUEUE_GROUP = 'kueue.x-k8s.io';

// Why a list is not there: refused before asking (an access review said no), or failed.
const why = (list, what) => (list.forbidden ? `you may not list ${what}` : (list.error ? list.error.message : ''));

const names = (list, what) => ({ names: list.items.map((o) => o.metadata.name).sort(), error: why(list, what) });

export function useChoices(namespace, runtimeKey) {
  const cluster = useListIfAllowed(`${TRAINER}/clustertrainingruntimes`,
    { verb: 'list', group: TRAINER_GROUP, resource: 'clustertrainingruntimes' });
  const local = useListIfAllowed(namespace && `${TRAINER}/namespaces/${namespace}/trainingruntimes`,
    { verb: 'list', group: TRAINER_GROUP, resource: 'trainingruntimes', namespace });
  const queues = useListIfAllowed(namespace && `${KUEUE}/namespaces/${namespace}/localqueues`,
    { verb: 'list', group: KUEUE_GROUP, resource: 'localqueues', namespace });
  const priorities = useListIfAllowed(`${KUEUE}/workloadpriorityclasses`,
    { verb: 'list', group: KUEUE_GROUP, resource: 'workloadpriorityclasses' });
  return useMemo(() => {
    const runtimes = [...cluster.items.map(describe(CLUSTER_RUNTIME)), ...local.items.map(describe('TrainingRuntime'))];
    const chosen = runtimes.find((r) => r.key === runtimeKey);
    const policy = (chosen && chosen.runtime.spec.mlPolicy) || {};
    const procs = policy.mpi ? policy.mpi.numProcPerNode : policy.torch && policy.torch.numProcPerNode;
    return {
      runtimes,
      runtimesError: why(cluster, "the cluster's runtimes"),
      queues: names(queues, "this namespace's LocalQueues"),
      priorities: names(priorities, 'WorkloadPriorityClasses'),
      defaults: { numNodes: policy.numNodes, numProcPerNode: procs },
    };
  }, [cluster, local.items, queues, priorities, runtimeKey]);
}
