// The jobs waiting in one queue, first in line first: Kueue's visibility API gives the order (read again
// whenever the queue's status changes, since it cannot be watched); the Workloads, watched, give each
// job's reason and estimated start. Without the visibility API the order is computed from the Workloads;
// without either, a LocalQueue's jobs come from its namespace's TrainJobs and their `Pending` events.
import { Label } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { CORE, VISIBILITY, trainjobsPath } from '../api.js';
import { useNow } from '../hooks.js';
import { humanDuration, jobState, LABEL_QUEUE } from '../model.js';
import { Empty, JobLink, Loading, ReadProblem } from './common.jsx';
import { access, isForbidden, useFetch, useGuardedList } from './data.js';
import {
  jobOf, pendingFromWorkloads, waitingSentence, waitingSince, workloadKey,
} from './queueModel.js';

const VISIBILITY_GROUP = 'visibility.kueue.x-k8s.io';

function visibilityPath({ clusterQueue, namespace, localQueue }) {
  const enc = encodeURIComponent;
  return localQueue
    ? `${VISIBILITY}/namespaces/${enc(namespace)}/localqueues/${enc(localQueue)}/pendingworkloads`
    : `${VISIBILITY}/clusterqueues/${enc(clusterQueue)}/pendingworkloads`;
}

/** The access review for the visibility API's answer about this queue. */
function visibilityAccess({ clusterQueue, namespace, localQueue }) {
  return localQueue
    ? { verb: 'get', group: VISIBILITY_GROUP, resource: 'localqueues', subresource: 'pendingworkloads', namespace, name: localQueue }
    : { verb: 'get', group: VISIBILITY_GROUP, resource: 'clusterqueues', subresource: 'pendingworkloads', name: clusterQueue };
}

/** Rows for the table from pending items (visibility API's shape), joined with their live Workloads. */
function rowsOf(items, byKey, inLocalQueue, now) {
  return items.map((item, i) => {
    const wl = byKey.get(workloadKey(item.metadata.namespace, item.metadata.name));
    const job = jobOf(wl || item);
    const position = inLocalQueue ? item.positionInLocalQueue : item.positionInClusterQueue;
    const since = wl ? waitingSince(wl) : Date.parse(item.metadata.creationTimestamp);
    return {
      key: `${item.metadata.namespace}/${item.metadata.name}`,
      position: (position ?? i) + 1,
      namespace: item.metadata.namespace,
      job: job.kind === 'TrainJob' ? job.name : '',
      workload: item.metadata.name,
      localQueue: item.localQueueName,
      priority: item.priority ?? 0,
      priorityClass: wl && wl.spec && wl.spec.priorityClassRef ? wl.spec.priorityClassRef.name : '',
      waited: (now - since) / 1000,
      why: wl ? waitingSentence(wl, now) : '',
    };
  });
}

function PendingTable({ rows, inLocalQueue, label, source }) {
  if (!rows.length) return <Empty title="No job is waiting">Every job sent to this queue has been admitted.</Empty>;
  return (
    <>
      <Table aria-label={label} variant="compact" className="mpijob-pending" data-testid="pending-jobs">
        <Thead>
          <Tr>
            <Th width={10}>Position</Th>
            <Th>Job</Th>
            {inLocalQueue ? null : <Th>Namespace</Th>}
            {inLocalQueue ? null : <Th>LocalQueue</Th>}
            <Th>Priority</Th>
            <Th>Waiting for</Th>
            <Th width={40}>Why</Th>
          </Tr>
        </Thead>
        <Tbody>
          {rows.map((r) => (
            <Tr key={r.key}>
              <Td dataLabel="Position">{r.position}</Td>
              <Td dataLabel="Job">{r.job ? <JobLink namespace={r.namespace} name={r.job} /> : r.workload}</Td>
              {inLocalQueue ? null : <Td dataLabel="Namespace">{r.namespace}</Td>}
              {inLocalQueue ? null : <Td dataLabel="LocalQueue">{r.localQueue}</Td>}
              <Td dataLabel="Priority">
                {r.priority}
                {r.priorityClass ? <Label isCompact className="pf-v6-u-ml-xs">{r.priorityClass}</Label> : null}
              </Td>
              <Td dataLabel="Waiting for">{humanDuration(r.waited)}</Td>
              <Td dataLabel="Why" modifier="breakWord">{r.why || <span className="pf-v6-u-text-color-subtle">no reason given yet</span>}</Td>
            </Tr>
          ))}
        </Tbody>
      </Table>
      <div className="pf-v6-u-font-size-xs pf-v6-u-text-color-subtle pf-v6-u-mt-xs">{source}</div>
    </>
  );
}

/**
 * scope: {clusterQueue} or {namespace, localQueue}. trigger: changes when the queue's status does.
 * workloads: the useScopedList of Workloads; localToCluster: "ns/lq" → ClusterQueue name.
 */
export function PendingJobs({ scope, trigger, workloads, localToCluster, label }) {
  const now = useNow(1000);
  const inLocalQueue = Boolean(scope.localQueue);
  const visibility = useFetch(visibilityPath(scope), trigger, visibilityAccess(scope));
  const byKey = new Map(workloads.items.map((w) => [workloadKey(w.metadata.namespace, w.metadata.name), w]));
  if (!visibility.loaded) return <Loading what="pending jobs" />;
  if (visibility.data) {
    return <PendingTable rows={rowsOf(visibility.data.items || [], byKey, inLocalQueue, now)} inLocalQueue={inLocalQueue}
      label={label} source="Order from Kueue's visibility API." />;
  }
  if (!isForbidden(visibility.error) && visibility.error.code !== 404) return <ReadProblem error={visibility.error} what="the pending jobs" />;
  if (!workloads.forbidden && workloads.loaded) {
    const items = pendingFromWorkloads(workloads.items, scope, localToCluster);
    return <PendingTable rows={rowsOf(items, byKey, inLocalQueue, now)} inLocalQueue={inLocalQueue} label={label}
      source="Order computed from the Workloads you may read (Kueue's order: priority, then time waiting)." />;
  }
  if (inLocalQueue) return <PendingFromJobs scope={scope} label={label} />;
  return <ReadProblem error={visibility.error} what="the pending jobs of this queue" />;
}

/** A LocalQueue's waiting TrainJobs, for a user who may read neither Workloads nor the visibility API. */
function PendingFromJobs({ scope, label }) {
  const now = useNow(1000);
  const ns = encodeURIComponent(scope.namespace);
  const jobs = useGuardedList(trainjobsPath(scope.namespace), { ...access('trainjobs', 'trainer.kubeflow.org'), namespace: scope.namespace });
  const events = useGuardedList(`${CORE}/namespaces/${ns}/events?fieldSelector=${encodeURIComponent('reason=Pending')}`,
    { ...access('events'), namespace: scope.namespace });
  if (!jobs.loaded) return <Loading what="pending jobs" />;
  if (jobs.error && !jobs.items.length) return <ReadProblem error={jobs.error} what="the jobs of this namespace" />;
  const latest = new Map(); // job name → its newest Pending event: the scheduler's sentence at that time
  for (const e of events.items) {
    const name = e.involvedObject && e.involvedObject.name;
    const t = Date.parse(e.lastTimestamp || e.eventTime || e.metadata.creationTimestamp);
    if (name && (!latest.has(name) || latest.get(name).t < t)) latest.set(name, { t, message: e.message });
  }
  const waiting = jobs.items
    .filter((j) => (j.metadata.labels || {})[LABEL_QUEUE] === scope.localQueue && jobState(j).state === 'Queued')
    .sort((a, b) => Date.parse(a.metadata.creationTimestamp) - Date.parse(b.metadata.creationTimestamp));
  const rows = waiting.map((j, i) => ({
    key: j.metadata.uid,
    position: i + 1,
    namespace: j.metadata.namespace,
    job: j.metadata.name,
    workload: j.metadata.name,
    localQueue: scope.localQueue,
    priority: (j.metadata.labels || {})['kueue.x-k8s.io/priority-class'] || 'default',
    priorityClass: '',
    waited: (now - Date.parse(j.metadata.creationTimestamp)) / 1000,
    why: (latest.get(j.metadata.name) || {}).message || jobState(j).message,
  }));
  return <PendingTable rows={rows} inLocalQueue label={label}
    source="You may not read this queue's Workloads: jobs listed in the order they were created, with the scheduler's last word on each." />;
}
