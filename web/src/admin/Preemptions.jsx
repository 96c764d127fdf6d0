// The table of recent preemptions: when, which job, by which job and why (Kueue's reason and message),
// and the ClusterQueue it waited in.
import { Label } from '@patternfly/react-core';
import { useNow } from '../hooks.js';
import { age } from '../model.js';
import { PREEMPTION_REASONS, preemptions } from './clusterModel.js';
import { Empty, JobLink, Loading, ReadProblem, when } from './common.jsx';
import { SortableTable } from './SortableTable.jsx';

function By({ by }) {
  if (!by) return <span className="pf-v6-u-text-color-subtle">not named</span>;
  if (!by.name) return <span>{by.namespace}/{by.workload}</span>;
  return <><JobLink namespace={by.namespace} name={by.name} /> <span className="pf-v6-u-text-color-subtle">({by.namespace})</span></>;
}

export function Preemptions({ workloads, events, jobs, localQueues }) {
  const now = useNow(10000);
  if (!workloads.loaded && !events.loaded) return <Loading what="preemptions" />;
  if (workloads.error && events.error && !workloads.items.length && !events.items.length) {
    return <ReadProblem error={workloads.error} what="the Workloads and events that record preemptions" />;
  }
  const localToCluster = new Map(localQueues.map((lq) => [`${lq.metadata.namespace}/${lq.metadata.name}`, lq.spec && lq.spec.clusterQueue]));
  const rows = preemptions({ workloads: workloads.items, events: events.items, jobs, localToCluster });
  if (!rows.length) return <Empty title="No preemptions">No job has been preempted recently.</Empty>;
  const columns = [
    { key: 'time', title: 'When', value: (r) => r.time, render: (r) => <span title={when(new Date(r.time))}>{age(new Date(r.time).toISOString(), now)} ago</span> },
    { key: 'job', title: 'Job preempted', value: (r) => r.job, render: (r) => <JobLink namespace={r.namespace} name={r.job} /> },
    { key: 'namespace', title: 'Namespace', value: (r) => r.namespace },
    { key: 'by', title: 'Preempted by', value: (r) => (r.by ? r.by.name || r.by.workload : ''), render: (r) => <By by={r.by} /> },
    {
      key: 'reason', title: 'Why', value: (r) => r.reason || '', width: 40, cellModifier: 'breakWord',
      render: (r) => (
        <>
          {r.reason ? <Label isCompact className="pf-v6-u-mr-xs">{r.reason}</Label> : null}
          {PREEMPTION_REASONS[r.reason] || ''}
          <div className="pf-v6-u-font-size-xs pf-v6-u-text-color-subtle">{r.message}</div>
        </>
      ),
    },
    { key: 'queue', title: 'ClusterQueue', value: (r) => r.queue || '' },
  ];
  return (
    <SortableTable ariaLabel="Preemptions" testId="preemptions" columns={columns} rows={rows}
      rowKey={(r) => `${r.namespace}/${r.job}/${r.time}`} sort={{ key: 'time', direction: 'desc' }} perPage={10} />
  );
}
