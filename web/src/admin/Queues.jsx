// #/queues: Kueue's ClusterQueues (quota against use per resource, borrowing, counts, fair share,
// preemption policy) and the LocalQueues of the namespaces the user may see, each with the jobs
// waiting in it in order and why. Everything is watched; the visibility API is read again on change.
import { useState } from 'react';
import {
  Content, DescriptionList, DescriptionListDescription, DescriptionListGroup, DescriptionListTerm, Label,
  LabelGroup, PageSection, Title,
} from '@patternfly/react-core';
import {
  ExpandableRowContent, Table, Tbody, Td, Th, Thead, Tr,
} from '@patternfly/react-table';
import { KUEUE } from '../api.js';
import { Empty, Loading, ReadProblem, SectionTitle } from './common.jsx';
import {
  access, isForbidden, useGuardedList, useScopedList,
} from './data.js';
import { PendingJobs } from './PendingJobs.jsx';
import {
  preemptionInWords, queueStatus, quotaRows, weightedShare, workloadKey,
} from './queueModel.js';
import { QuotaBars } from './QuotaBars.jsx';

const KUEUE_GROUP = 'kueue.x-k8s.io';

function StatusLabel({ queue }) {
  const s = queueStatus(queue);
  return <Label isCompact color={s.active ? 'green' : 'orange'} title={s.message || undefined}>{s.text}</Label>;
}

function useExpanded() {
  const [open, setOpen] = useState(() => new Set());
  const toggle = (key) => setOpen((s) => {
    const next = new Set(s);
    if (next.has(key)) next.delete(key); else next.add(key);
    return next;
  });
  return [open, toggle];
}

function ClusterQueueDetails({ cq, localQueues, workloads, localToCluster }) {
  const name = cq.metadata.name;
  const spec = cq.spec || {};
  const mine = localQueues.filter((lq) => lq.spec && lq.spec.clusterQueue === name);
  return (
    <>
      <DescriptionList isCompact isHorizontal className="pf-v6-u-mb-md">
        <DescriptionListGroup>
          <DescriptionListTerm>Queueing</DescriptionListTerm>
          <DescriptionListDescription>{spec.queueingStrategy || 'BestEffortFIFO'}{spec.stopPolicy && spec.stopPolicy !== 'None' ? `, stopped (${spec.stopPolicy})` : ''}</DescriptionListDescription>
        </DescriptionListGroup>
        <DescriptionListGroup>
          <DescriptionListTerm>LocalQueues</DescriptionListTerm>
          <DescriptionListDescription>
            {mine.length ? (
              <LabelGroup numLabels={8} aria-label={`LocalQueues of ${name}`}>
                {mine.map((lq) => (
                  <Label key={lq.metadata.uid} isCompact>
                    {lq.metadata.namespace}/{lq.metadata.name}: {(lq.status || {}).pendingWorkloads || 0} pending, {(lq.status || {}).admittedWorkloads || 0} admitted
                  </Label>
                ))}
              </LabelGroup>
            ) : 'none you may see'}
          </DescriptionListDescription>
        </DescriptionListGroup>
      </DescriptionList>
      <Title headingLevel="h3" size="md" className="pf-v6-u-mb-sm">Pending jobs in order</Title>
      <PendingJobs scope={{ clusterQueue: name }} trigger={cq.metadata.resourceVersion} workloads={workloads}
        localToCluster={localToCluster} label={`Pending jobs in ClusterQueue ${name}`} />
    </>
  );
}

function ClusterQueuesTable({ queues, localQueues, workloads, localToCluster }) {
  const [open, toggle] = useExpanded();
  const showShare = queues.some((q) => (q.spec && (q.spec.cohortName || q.spec.fairSharing)));
  const columns = 7 + (showShare ? 1 : 0);
  const sorted = [...queues].sort((a, b) => ((a.spec.cohortName || '').localeCompare(b.spec.cohortName || ''))
    || a.metadata.name.localeCompare(b.metadata.name));
  return (
    <Table aria-label="ClusterQueues" data-testid="clusterqueues">
      <Thead>
        <Tr>
          <Th screenReaderText="Show pending jobs" />
          <Th>Name</Th>
          <Th>Cohort</Th>
          <Th width={30}>Quota in use</Th>
          <Th modifier="wrap">Admitted</Th>
          <Th modifier="wrap">Pending</Th>
          {showShare ? <Th modifier="wrap" info={{ tooltip: 'Fair sharing: the use above nominal quota over what the cohort lends (per mille, as Kueue reports it), divided by the queue\u2019s weight. 0: within its own quota. Kueue admits first from the queue with the lowest share.' }}>Weighted share</Th> : null}
          <Th>Preemption</Th>
        </Tr>
      </Thead>
      {sorted.map((cq, rowIndex) => {
        const name = cq.metadata.name;
        const isOpen = open.has(name);
        const status = cq.status || {};
        const share = weightedShare(cq);
        const weight = cq.spec.fairSharing && cq.spec.fairSharing.weight;
        return (
          <Tbody key={cq.metadata.uid} isExpanded={isOpen}>
            <Tr data-testid={`clusterqueue-${name}`}>
              <Td expand={{ rowIndex, isExpanded: isOpen, onToggle: () => toggle(name), expandId: 'clusterqueue-expand' }} />
              <Td dataLabel="Name" modifier="nowrap"><strong>{name}</strong><div><StatusLabel queue={cq} /></div></Td>
              <Td dataLabel="Cohort">{cq.spec.cohortName || <span className="pf-v6-u-text-color-subtle">none</span>}</Td>
              <Td dataLabel="Quota in use"><QuotaBars rows={quotaRows(cq)} inCohort={Boolean(cq.spec.cohortName)} queue={name} /></Td>
              <Td dataLabel="Admitted">{status.admittedWorkloads || 0}</Td>
              <Td dataLabel="Pending">{status.pendingWorkloads || 0}</Td>
              {showShare ? <Td dataLabel="Weighted share">{share || '–'}{weight !== undefined ? ` (weight ${weight})` : ''}</Td> : null}
              <Td dataLabel="Preemption" modifier="breakWord">{preemptionInWords(cq)}</Td>
            </Tr>
            <Tr isExpanded={isOpen}>
              <Td colSpan={columns + 1}>
                <ExpandableRowContent>
                  {isOpen ? <ClusterQueueDetails cq={cq} localQueues={localQueues} workloads={workloads} localToCluster={localToCluster} /> : null}
                </ExpandableRowContent>
              </Td>
            </Tr>
          </Tbody>
        );
      })}
    </Table>
  );
}

function LocalQueuesTable({ queues, workloads, localToCluster }) {
  const [open, toggle] = useExpanded();
  const sorted = [...queues].sort((a, b) => a.metadata.namespace.localeCompare(b.metadata.namespace)
    || a.metadata.name.localeCompare(b.metadata.name));
  return (
    <Table aria-label="LocalQueues" data-testid="localqueues">
      <Thead>
        <Tr>
          <Th screenReaderText="Show pending jobs" />
          <Th>Namespace</Th>
          <Th>Name</Th>
          <Th>ClusterQueue</Th>
          <Th>Admitted</Th>
          <Th>Pending</Th>
          <Th>Status</Th>
        </Tr>
      </Thead>
      {sorted.map((lq, rowIndex) => {
        const key = workloadKey(lq.metadata.namespace, lq.metadata.name);
        const isOpen = open.has(key);
        const status = lq.status || {};
        return (
          <Tbody key={lq.metadata.uid} isExpanded={isOpen}>
            <Tr data-testid={`localqueue-${lq.metadata.namespace}-${lq.metadata.name}`}>
              <Td expand={{ rowIndex, isExpanded: isOpen, onToggle: () => toggle(key), expandId: 'localqueue-expand' }} />
              <Td dataLabel="Namespace">{lq.metadata.namespace}</Td>
              <Td dataLabel="Name"><strong>{lq.metadata.name}</strong></Td>
              <Td dataLabel="ClusterQueue">{lq.spec && lq.spec.clusterQueue}</Td>
              <Td dataLabel="Admitted">{status.admittedWorkloads || 0}</Td>
              <Td dataLabel="Pending">{status.pendingWorkloads || 0}</Td>
              <Td dataLabel="Status"><StatusLabel queue={lq} /></Td>
            </Tr>
            <Tr isExpanded={isOpen}>
              <Td colSpan={7}>
                <ExpandableRowContent>
                  {isOpen ? (
                    <PendingJobs scope={{ namespace: lq.metadata.namespace, localQueue: lq.metadata.name }}
                      trigger={lq.metadata.resourceVersion} workloads={workloads} localToCluster={localToCluster}
                      label={`Pending jobs in LocalQueue ${lq.metadata.namespace}/${lq.metadata.name}`} />
                  ) : null}
                </ExpandableRowContent>
              </Td>
            </Tr>
          </Tbody>
        );
      })}
    </Table>
  );
}

function PriorityClasses({ classes }) {
  if (!classes.length) return null;
  const sorted = [...classes].sort((a, b) => (b.value || 0) - (a.value || 0));
  return (
    <PageSection aria-labelledby="queues-priorities">
      <SectionTitle id="queues-priorities">Priority classes</SectionTitle>
      <Table aria-label="WorkloadPriorityClasses" variant="compact">
        <Thead><Tr><Th>Name</Th><Th>Value</Th><Th>Description</Th></Tr></Thead>
        <Tbody>
          {sorted.map((c) => (
            <Tr key={c.metadata.uid}>
              <Td dataLabel="Name">{c.metadata.name}</Td>
              <Td dataLabel="Value">{c.value || 0}</Td>
              <Td dataLabel="Description">{c.description || ''}</Td>
            </Tr>
          ))}
        </Tbody>
      </Table>
    </PageSection>
  );
}

export default function Queues() {
  const cqs = useGuardedList(`${KUEUE}/clusterqueues`, access('clusterqueues', KUEUE_GROUP));
  const lqs = useScopedList(`${KUEUE}/localqueues`, (ns) => `${KUEUE}/namespaces/${encodeURIComponent(ns)}/localqueues`,
    access('localqueues', KUEUE_GROUP));
  const workloads = useScopedList(`${KUEUE}/workloads`, (ns) => `${KUEUE}/namespaces/${encodeURIComponent(ns)}/workloads`,
    access('workloads', KUEUE_GROUP));
  const priorities = useGuardedList(`${KUEUE}/workloadpriorityclasses`, access('workloadpriorityclasses', KUEUE_GROUP));
  const localToCluster = new Map(lqs.items.map((lq) => [workloadKey(lq.metadata.namespace, lq.metadata.name), lq.spec && lq.spec.clusterQueue]));
  const pending = cqs.items.reduce((n, q) => n + ((q.status && q.status.pendingWorkloads) || 0), 0);
  const admitted = cqs.items.reduce((n, q) => n + ((q.status && q.status.admittedWorkloads) || 0), 0);
  return (
    <>
      <PageSection>
        <Title headingLevel="h1">Queues</Title>
        <Content component="p">
          Jobs wait in a LocalQueue of their namespace; its ClusterQueue admits them while its quota allows,
          borrowing unused quota from the other queues of its cohort.
          {cqs.loaded && !cqs.error ? ` ${admitted} admitted, ${pending} pending now.` : ''}
        </Content>
      </PageSection>
      <PageSection aria-labelledby="queues-cq">
        <SectionTitle id="queues-cq">ClusterQueues</SectionTitle>
        {!cqs.loaded ? <Loading what="ClusterQueues" /> : null}
        {cqs.loaded && cqs.error && !cqs.items.length ? <ReadProblem error={cqs.error} what="ClusterQueues" /> : null}
        {cqs.loaded && !cqs.error && !cqs.items.length ? (
          <Empty title="No ClusterQueues">Jobs are admitted as they come: no queue holds them back.</Empty>
        ) : null}
        {cqs.items.length ? <ClusterQueuesTable queues={cqs.items} localQueues={lqs.items} workloads={workloads} localToCluster={localToCluster} /> : null}
      </PageSection>
      <PageSection aria-labelledby="queues-lq">
        <SectionTitle id="queues-lq">LocalQueues</SectionTitle>
        {!lqs.loaded ? <Loading what="LocalQueues" /> : null}
        {lqs.loaded && lqs.forbidden ? <ReadProblem error={lqs.error || { code: 403 }} what="LocalQueues" /> : null}
        {lqs.loaded && !lqs.forbidden && lqs.error && !isForbidden(lqs.error) && !lqs.items.length ? <ReadProblem error={lqs.error} what="LocalQueues" /> : null}
        {lqs.loaded && !lqs.forbidden && !lqs.error && !lqs.items.length ? (
          <Empty title="No LocalQueues">No namespace you may see has a LocalQueue.</Empty>
        ) : null}
        {lqs.items.length ? <LocalQueuesTable queues={lqs.items} workloads={workloads} localToCluster={localToCluster} /> : null}
      </PageSection>
      <PriorityClasses classes={priorities.items} />
    </>
  );
}
