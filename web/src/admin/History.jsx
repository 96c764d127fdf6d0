// #/history: every job that ran, from the server's records (kept after the jobs are deleted): jobs and
// GPU-hours per namespace per day over the last 7, 30 or 90 days, totals, and the records themselves.
import { useState } from 'react';
import {
  Button, Content, PageSection, Title, ToggleGroup, ToggleGroupItem, Toolbar, ToolbarContent, ToolbarItem,
} from '@patternfly/react-core';
import { trainjobsPath } from '../api.js';
import { jobState } from '../model.js';
import { Loading, ReadProblem, SectionTitle } from './common.jsx';
import { access, useScopedList } from './data.js';
import { HistoryCharts } from './HistoryCharts.jsx';
import { HistoryTable } from './HistoryTable.jsx';
import {
  formatHours, lastDays, perDay, RANGES, rangeStart, totalsByNamespace,
} from './historyModel.js';
import { useRecords } from './records.js';
import { SortableTable } from './SortableTable.jsx';

const TOTAL_COLUMNS = [
  { key: 'namespace', title: 'Namespace', value: (r) => r.namespace },
  { key: 'jobs', title: 'Jobs ended', value: (r) => r.jobs },
  { key: 'complete', title: 'Complete', value: (r) => r.complete },
  { key: 'failed', title: 'Failed', value: (r) => r.failed },
  { key: 'deleted', title: 'Deleted', value: (r) => r.deleted },
  { key: 'gpuHours', title: 'GPU-hours', value: (r) => r.gpuHours, render: (r) => formatHours(r.gpuHours) },
  { key: 'cpuHours', title: 'CPU-hours', value: (r) => r.cpuHours, render: (r) => formatHours(r.cpuHours) },
];

/** Changes whenever a visible TrainJob appears, changes state or goes: when the records change too. */
function useRecordsTrigger() {
  const jobs = useScopedList(trainjobsPath(), (ns) => trainjobsPath(ns), access('trainjobs', 'trainer.kubeflow.org'));
  return jobs.items.map((j) => `${j.metadata.uid}:${jobState(j).state}`).sort().join(',');
}

export default function History() {
  const [days, setDays] = useState(7);
  const [refreshes, setRefreshes] = useState(0);
  const since = rangeStart(days); // local midnight: the same string all day, so no refetch per render
  const trigger = useRecordsTrigger();
  const records = useRecords(since, `${trigger}/${refreshes}`);
  const rangeText = `in the last ${days} days`;
  const per = perDay(records.items, lastDays(days));
  return (
    <>
      <PageSection>
        <Title headingLevel="h1">History</Title>
        <Content component="p">
          Every job that ran, kept after it is deleted: who ran it, how long it waited and ran, how it ended and
          what it used{records.scope ? ` (${records.scope === 'cluster' ? 'every namespace' : 'the namespaces you may see'})` : ''}.
          Jobs count on the day they ended, in your time zone.
        </Content>
        <Toolbar>
          <ToolbarContent>
            <ToolbarItem>
              <ToggleGroup aria-label="Date range">
                {RANGES.map((d) => (
                  <ToggleGroupItem key={d} text={`Last ${d} days`} buttonId={`history-range-${d}`} isSelected={days === d}
                    onChange={() => setDays(d)} />
                ))}
              </ToggleGroup>
            </ToolbarItem>
            <ToolbarItem>
              <Button variant="secondary" onClick={() => setRefreshes((n) => n + 1)}>Refresh</Button>
            </ToolbarItem>
          </ToolbarContent>
        </Toolbar>
      </PageSection>
      {!records.loaded ? <PageSection><Loading what="job records" /></PageSection> : null}
      {records.loaded && records.error ? <PageSection><ReadProblem error={records.error} what="the job history" headingLevel="h2" /></PageSection> : null}
      {records.loaded && !records.error ? (
        <>
          <PageSection aria-labelledby="history-charts">
            <SectionTitle id="history-charts">Per namespace per day</SectionTitle>
            <HistoryCharts per={per} rangeText={rangeText} />
          </PageSection>
          <PageSection aria-labelledby="history-totals">
            <SectionTitle id="history-totals">Totals by namespace</SectionTitle>
            <SortableTable ariaLabel="Totals by namespace" testId="history-totals" columns={TOTAL_COLUMNS}
              rows={totalsByNamespace(records.items, since)} rowKey={(r) => r.namespace} sort={{ key: 'jobs', direction: 'desc' }} />
          </PageSection>
          <PageSection aria-labelledby="history-records">
            <SectionTitle id="history-records">Records</SectionTitle>
            <HistoryTable records={records.items} />
          </PageSection>
        </>
      ) : null}
    </>
  );
}
