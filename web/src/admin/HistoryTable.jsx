// The records themselves, newest first (by end, else submission), sortable, paginated, filterable by
// name, namespace or user: `mpijob history -A -o wide` in a table.
import { useState } from 'react';
import { Label, SearchInput, Toolbar, ToolbarContent, ToolbarItem } from '@patternfly/react-core';
import { humanDuration } from '../model.js';
import { Empty, JobLink, when } from './common.jsx';
import { formatHours } from './historyModel.js';
import { SortableTable } from './SortableTable.jsx';

const COLORS = { Complete: 'green', Failed: 'red', Deleted: 'grey', Running: 'blue', Pending: 'orange' };
const latest = (r) => Date.parse(r.finished || r.started || r.submitted) || 0;

function State({ record }) {
  const detail = record.failure || (record.state === 'Complete' ? '' : record.reason);
  return (
    <>
      <Label isCompact color={COLORS[record.state] || 'grey'}>{record.state}</Label>
      {detail ? <div className="pf-v6-u-font-size-xs" title={record.message || undefined}>{detail}</div> : null}
    </>
  );
}

const COLUMNS = [
  { key: 'name', title: 'Job', value: (r) => r.metadata.name, render: (r) => <JobLink namespace={r.metadata.namespace} name={r.metadata.name} /> },
  { key: 'namespace', title: 'Namespace', value: (r) => r.metadata.namespace },
  { key: 'user', title: 'User', value: (r) => r.requester || '' },
  { key: 'state', title: 'State', value: (r) => r.state, render: (r) => <State record={r} /> },
  { key: 'nodes', title: 'Nodes', value: (r) => r.nodes || 0 },
  { key: 'gpus', title: 'GPUs', value: (r) => r.gpus || 0 },
  { key: 'submitted', title: 'Submitted', value: (r) => Date.parse(r.submitted) || 0, render: (r) => when(r.submitted), cellModifier: 'nowrap' },
  { key: 'wait', title: 'Wait', value: (r) => r.waitSeconds ?? -1, render: (r) => (r.waitSeconds === null || r.waitSeconds === undefined ? '–' : humanDuration(r.waitSeconds)) },
  { key: 'run', title: 'Run', value: (r) => r.runSeconds ?? -1, render: (r) => (r.runSeconds ? humanDuration(r.runSeconds) : '–') },
  { key: 'cpuHours', title: 'CPU-hours', value: (r) => r.cpuHours ?? -1, render: (r) => formatHours(r.cpuHours) },
  { key: 'gpuHours', title: 'GPU-hours', value: (r) => r.gpuHours ?? -1, render: (r) => formatHours(r.gpuHours) },
  { key: 'ended', title: 'Ended', value: latest, render: (r) => (r.finished ? when(r.finished) : <span className="pf-v6-u-text-color-subtle">not yet</span>), cellModifier: 'nowrap' },
];

export function HistoryTable({ records }) {
  const [filter, setFilter] = useState('');
  const f = filter.trim().toLowerCase();
  const shown = f ? records.filter((r) => [r.metadata.name, r.metadata.namespace, r.requester, r.state, r.failure]
    .some((v) => (v || '').toLowerCase().includes(f))) : records;
  return (
    <>
      <Toolbar>
        <ToolbarContent>
          <ToolbarItem>
            <SearchInput aria-label="Filter the records by job, namespace, user or state" placeholder="Filter by job, namespace, user, state"
              value={filter} onChange={(_e, v) => setFilter(v)} onClear={() => setFilter('')} />
          </ToolbarItem>
        </ToolbarContent>
      </Toolbar>
      {shown.length ? (
        <SortableTable ariaLabel="Job records" testId="job-records" columns={COLUMNS} rows={shown}
          rowKey={(r) => r.metadata.uid} sort={{ key: 'ended', direction: 'desc' }} perPage={20} />
      ) : <Empty title={records.length ? 'No record matches' : 'No job recorded in this range'} />}
    </>
  );
}
