// The Kubernetes Events of the job and its objects (pods, Workload), newest first, live. The namespace's
// events are watched (a field selector names one object only) while the tab is shown, and filtered here.
import { Alert, Label } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import ExclamationTriangleIcon from '@patternfly/react-icons/dist/esm/icons/exclamation-triangle-icon';
import { CORE } from '../api.js';
import { useCanI, useListWatch, useNow } from '../hooks.js';
import { age } from '../model.js';
import { localTime } from '../model.js';
import { ownsEvent } from './model.js';

const lastSeen = (e) => e.lastTimestamp || e.eventTime || (e.series && e.series.lastObservedTime) || e.firstTimestamp
  || e.metadata.creationTimestamp;

export default function Events({ job, pods, workload, active }) {
  const now = useNow(5000);
  const may = useCanI({ verb: 'list', resource: 'events', namespace: job.metadata.namespace });
  const { items, error, loaded } = useListWatch(active && may ? `${CORE}/namespaces/${job.metadata.namespace}/events` : null);
  const podNames = new Set(pods.map((p) => p.metadata.name));
  const workloadNames = new Set(workload ? [workload.metadata.name] : []);
  const events = items.filter((e) => ownsEvent(e, job, podNames, workloadNames))
    .sort((a, b) => (lastSeen(b) || '').localeCompare(lastSeen(a) || ''));
  return (
    <>
      {may === false && <Alert component="h2" variant="info" isInline title="You may not list the events of this namespace" />}
      {error && <Alert component="h2" variant="warning" isInline title="Events are not readable" className="pf-v6-u-mb-sm">{error.message}</Alert>}
      <Table aria-label="Events of the job, its pods and its Workload" variant="compact" data-testid="events-table">
        <Thead>
          <Tr>
            <Th modifier="fitContent">Type</Th><Th modifier="wrap">Reason</Th><Th modifier="wrap">Object</Th><Th>Message</Th>
            <Th modifier="fitContent">Count</Th><Th modifier="fitContent">Last seen</Th>
          </Tr>
        </Thead>
        <Tbody>
          {loaded && may && !events.length && <Tr><Td colSpan={6}>No events.</Td></Tr>}
          {events.map((e) => {
            const o = e.involvedObject || {};
            const warning = e.type === 'Warning';
            return (
              <Tr key={e.metadata.uid} data-testid="event-row" className={warning ? 'mpijob-event--warning' : ''}>
                <Td dataLabel="Type">
                  {warning ? <Label color="red" icon={<ExclamationTriangleIcon />}>Warning</Label> : <Label>{e.type || 'Normal'}</Label>}
                </Td>
                <Td dataLabel="Reason">{e.reason}</Td>
                <Td dataLabel="Object">{`${(o.kind || '').toLowerCase()}/${o.name || ''}`}</Td>
                <Td dataLabel="Message" className="mpijob-event__message">{e.message}</Td>
                <Td dataLabel="Count">{e.count || (e.series && e.series.count) || 1}</Td>
                <Td dataLabel="Last seen" modifier="nowrap"><span title={localTime(lastSeen(e))}>{`${age(lastSeen(e), now)} ago`}</span></Td>
              </Tr>
            );
          })}
        </Tbody>
      </Table>
    </>
  );
}
