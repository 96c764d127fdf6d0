// Where each field's help sends a reader: the project's docs first, upstream where it explains better.
import { DOCS } from '../model.js';

const K8S = 'https://kubernetes.io/docs';
const TRAINER = 'https://www.kubeflow.org/docs/components/trainer';
const KUEUE = 'https://kueue.sigs.k8s.io/docs/concepts';
const PAGE = ['The Create job page', `${DOCS}/dashboard.md#pages`];

export const LINKS = {
  name: [PAGE, ['Kubernetes: object names', `${K8S}/concepts/overview/working-with-objects/names/#rfc-1035-label-names`]],
  namespace: [['Who may do what: identities and RBAC', `${DOCS}/security.md#identities-and-rbac`],
    ['Kubernetes: namespaces', `${K8S}/concepts/overview/working-with-objects/namespaces/`]],
  runtime: [PAGE, ['Kubeflow Trainer: runtimes', `${TRAINER}/operator-guides/runtime/`]],
  image: [['What a pod may rely on', `${DOCS}/sandbox.md`], ['Kubeflow Trainer: getting started', `${TRAINER}/getting-started/`]],
  command: [['Troubleshooting: command not found', `${DOCS}/troubleshooting.md#command-not-found`],
    ['Reporting progress from a program', `${DOCS}/progress.md`]],
  numNodes: [['Kubeflow Trainer: ML policy (numNodes)', `${TRAINER}/operator-guides/ml-policy/`]],
  numProcPerNode: [['Troubleshooting: not enough slots', `${DOCS}/troubleshooting.md#not-enough-slots`],
    ['Kubeflow Trainer: ML policy (MPI slots)', `${TRAINER}/operator-guides/ml-policy/`]],
  resources: [['Namespace quotas', `${DOCS}/security.md#namespace-quotas`],
    ['Troubleshooting: OOM-killed', `${DOCS}/troubleshooting.md#oom-killed`],
    ['Kubernetes: resources of containers', `${K8S}/concepts/configuration/manage-resources-containers/`]],
  env: [['Kubernetes: environment variables', `${K8S}/tasks/inject-data-application/define-environment-variable-container/`]],
  queue: [['Kueue: LocalQueue', `${KUEUE}/local_queue/`], PAGE],
  priority: [['Kueue: WorkloadPriorityClass', `${KUEUE}/workload_priority_class/`]],
  volumes: [['Files: what a pod sees', `${DOCS}/README.md#files-what-a-pod-sees`]],
  yaml: [['Kubeflow Trainer: TrainJob', `${TRAINER}/overview/`], PAGE],
};
