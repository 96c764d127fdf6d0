// #/cluster (for who may list nodes): the machine's capacity against what pods were allocated and use
// now, who holds it (by namespace, by user), namespace quotas, and the preemptions Kueue made.
// Lists are watched; the metrics API cannot be, so it is read every few seconds.
import {
  Alert, Content, PageSection, Title,
} from '@patternfly/react-core';
import { CORE, KUEUE, trainjobsPath } from '../api.js';
import { useCanI, useListsWatch } from '../hooks.js';
import { GPU } from '../model.js';
import { CapacityCards } from './CapacityCards.jsx';
import {
  allocated, byNamespace, byUser, gpuBusy, gpusReported, idleGpus, nodeTotals, nodeUsage,
} from './clusterModel.js';
import { Empty, JobLink, Loading, ReadProblem, SectionTitle } from './common.jsx';
import {
  access, FORBIDDEN, useGuardedList, usePoll,
} from './data.js';
import { Preemptions } from './Preemptions.jsx';
import { formatAmount, formatBytes, MAIN_RESOURCES } from './quantity.js';
import { Quotas } from './Quotas.jsx';
import { SortableTable } from './SortableTable.jsx';

const METRICS = '/apis/metrics.k8s.io/v1beta1';
const POLL_MS = 5000;
const round = (v) => String(Math.round(v * 100) / 100);

function usageColumns(first, firstKey) {
  return [
    { key: firstKey, title: first, value: (r) => r.group },
    { key: 'jobs', title: 'Running jobs', value: (r) => r.jobs },
    { key: 'pods', title: 'Pods', value: (r) => r.pods },
    { key: 'cpu', title: 'CPU (cores)', value: (r) => r.cpu, render: (r) => round(r.cpu) },
    { key: 'memory', title: 'Memory', value: (r) => r.memory, render: (r) => formatBytes(r.memory) },
    { key: 'gpu', title: 'GPUs', value: (r) => r.gpu, render: (r) => round(r.gpu) },
  ];
}

function UsageSection({ id, title, what, rows, pods, firstTitle, firstKey, testId }) {
  return (
    <PageSection aria-labelledby={id}>
      <SectionTitle id={id}>{title}</SectionTitle>
      {!pods.loaded ? <Loading what={what} /> : null}
      {pods.loaded && pods.error && !pods.items.length ? <ReadProblem error={pods.error} what="the pods of every namespace" /> : null}
      {pods.loaded && !pods.error && !rows.length ? <Empty title="Nothing allocated">No pod holds resources now.</Empty> : null}
      {rows.length ? (
        <SortableTable ariaLabel={title} testId={testId} columns={usageColumns(firstTitle, firstKey)} rows={rows}
          rowKey={(r) => r.group} sort={{ key: 'gpu', direction: 'desc' }} />
      ) : null}
    </PageSection>
  );
}

function IdleGpus({ podMetrics, allocatedGpus }) {
  if (!allocatedGpus) return null;
  if (!podMetrics.data) return null;
  const items = podMetrics.data.items || [];
  if (!gpusReported(items)) {
    return (
      <Alert isInline isPlain variant="info" title="GPU utilization is not measured here" className="pf-v6-u-mt-md" component="h3">
        {formatAmount(GPU, allocatedGpus)} allocated, but the metrics report no GPU (no NVIDIA driver on this machine),
        so idle GPUs cannot be spotted.
      </Alert>
    );
  }
  const idle = idleGpus(items);
  if (!idle.length) return null;
  return (
    <Alert isInline variant="warning" title="Allocated GPUs are idle" className="pf-v6-u-mt-md" data-testid="idle-gpus" component="h3">
      <ul>
        {idle.map((j) => (
          <li key={`${j.namespace}/${j.name}`}>
            <JobLink namespace={j.namespace} name={j.name} /> ({j.namespace}) holds {formatAmount(GPU, j.count)} at
            {' '}{Math.round(j.utilization)}% mean utilization.
          </li>
        ))}
      </ul>
    </Alert>
  );
}

export default function Cluster() {
  const nodes = useGuardedList(`${CORE}/nodes`, access('nodes'));
  const pods = useGuardedList(`${CORE}/pods`, access('pods'));
  const jobs = useGuardedList(trainjobsPath(), access('trainjobs', 'trainer.kubeflow.org'));
  const nodeMetrics = usePoll(`${METRICS}/nodes`, POLL_MS, { verb: 'list', ...access('nodes', 'metrics.k8s.io') });
  const podMetrics = usePoll(`${METRICS}/pods`, POLL_MS, { verb: 'list', ...access('pods', 'metrics.k8s.io') });

  const totals = nodeTotals(nodes.items);
  const alloc = allocated(pods.items);
  const usage = nodeMetrics.data ? nodeUsage(nodeMetrics.data.items || []) : null;
  const podItems = (podMetrics.data && podMetrics.data.items) || [];
  const gpuMeasured = gpusReported(podItems);
  const resources = MAIN_RESOURCES.filter((r) => r !== GPU || totals.capacity[GPU] || alloc[GPU]).map((resource) => {
    let used = null;
    let usedNote = nodeMetrics.error ? 'metrics not readable' : 'not measured yet';
    if (resource === GPU) {
      used = gpuMeasured ? gpuBusy(podItems) : null;
      usedNote = 'not measured (no GPU metrics)';
    } else if (usage) used = usage[resource];
    return {
      resource, capacity: totals.capacity[resource] || 0, allocatable: totals.allocatable[resource] || 0,
      allocated: alloc[resource] || 0, used, usedNote,
    };
  });
  const jobsByKey = new Map(jobs.items.map((j) => [`${j.metadata.namespace}/${j.metadata.name}`, j]));

  return (
    <>
      <PageSection>
        <Title headingLevel="h1">Cluster</Title>
        <Content component="p">
          What the machine offers jobs, what the pods that hold resources were allocated, and what they use now
          (metrics read every {POLL_MS / 1000} seconds).
        </Content>
      </PageSection>
      <PageSection aria-labelledby="cluster-capacity">
        <SectionTitle id="cluster-capacity">Capacity and allocation</SectionTitle>
        {!nodes.loaded ? <Loading what="nodes" /> : null}
        {nodes.loaded && nodes.error && !nodes.items.length ? <ReadProblem error={nodes.error} what="the nodes" /> : null}
        {nodes.loaded && !nodes.error && !nodes.items.length ? <Empty title="No nodes">The cluster has registered no node yet.</Empty> : null}
        {nodes.items.length ? <CapacityCards resources={resources} /> : null}
        {pods.error && pods.items.length === 0 && nodes.items.length ? <ReadProblem error={pods.error} what="the pods (allocation)" /> : null}
        <IdleGpus podMetrics={podMetrics} allocatedGpus={alloc[GPU] || 0} />
      </PageSection>
      <UsageSection id="cluster-by-namespace" title="Usage by namespace" what="usage by namespace" pods={pods}
        rows={byNamespace(pods.items, jobsByKey)} firstTitle="Namespace" firstKey="namespace" testId="usage-by-namespace" />
      <UsageSection id="cluster-by-user" title="Usage by user" what="usage by user" pods={pods}
        rows={byUser(pods.items, jobsByKey)} firstTitle="User" firstKey="user" testId="usage-by-user" />
      <Quotas />
      <PreemptionsSection jobs={jobs.items} />
    </>
  );
}

function PreemptionsSection({ jobs }) {
  const workloads = useGuardedList(`${KUEUE}/workloads`, access('workloads', 'kueue.x-k8s.io'));
  const localQueues = useGuardedList(`${KUEUE}/localqueues`, access('localqueues', 'kueue.x-k8s.io'));
  const eventsAllowed = useCanI({ verb: 'list', ...access('events') });
  const watched = useListsWatch(eventsAllowed ? [
    `${CORE}/events?fieldSelector=${encodeURIComponent('reason=Preempted')}`,
    `${CORE}/events?fieldSelector=${encodeURIComponent('reason=EvictedDueToPreempted')}`,
  ] : []);
  const events = eventsAllowed === false ? { items: [], loaded: true, error: FORBIDDEN } : watched;
  return (
    <PageSection aria-labelledby="cluster-preemptions">
      <SectionTitle id="cluster-preemptions">Preemptions</SectionTitle>
      <Preemptions workloads={workloads} events={events} jobs={jobs} localQueues={localQueues.items} />
    </PageSection>
  );
}
