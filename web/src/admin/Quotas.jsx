// Namespace ResourceQuotas (core/v1): what each namespace's unfinished jobs count against its caps,
// as `kubectl describe quota` shows Used and Hard.
import {
  PageSection, Progress, ProgressMeasureLocation, ProgressSize, ProgressVariant,
} from '@patternfly/react-core';
import { CORE } from '../api.js';
import { Empty, Loading, ReadProblem, SectionTitle } from './common.jsx';
import { access, useGuardedList } from './data.js';
import { parseQuantity } from './quantity.js';
import { SortableTable } from './SortableTable.jsx';

function Keys({ quota }) {
  const hard = (quota.status && quota.status.hard) || quota.spec.hard || {};
  const used = (quota.status && quota.status.used) || {};
  return (
    <div className="mpijob-quota-list">
      {Object.keys(hard).sort().map((k) => {
        const h = parseQuantity(hard[k]);
        const u = parseQuantity(used[k]);
        const label = `${used[k] || '0'} of ${hard[k]}`;
        return (
          <Progress key={k} title={k} value={h > 0 ? Math.min(100, (u / h) * 100) : 0} label={label} valueText={label}
            size={ProgressSize.sm} measureLocation={ProgressMeasureLocation.outside}
            variant={h > 0 && u >= h ? ProgressVariant.danger : undefined} />
        );
      })}
    </div>
  );
}

export function Quotas() {
  const quotas = useGuardedList(`${CORE}/resourcequotas`, access('resourcequotas'));
  const columns = [
    { key: 'namespace', title: 'Namespace', value: (q) => q.metadata.namespace },
    { key: 'name', title: 'Quota', value: (q) => q.metadata.name },
    { key: 'keys', title: 'Used of hard', value: (q) => Object.keys(q.spec.hard || {}).length, render: (q) => <Keys quota={q} />, width: 60, sortable: false },
  ];
  return (
    <PageSection aria-labelledby="cluster-quotas">
      <SectionTitle id="cluster-quotas">Namespace quotas</SectionTitle>
      {!quotas.loaded ? <Loading what="quotas" /> : null}
      {quotas.loaded && quotas.error && !quotas.items.length ? <ReadProblem error={quotas.error} what="ResourceQuotas" /> : null}
      {quotas.loaded && !quotas.error && !quotas.items.length ? <Empty title="No quotas">No namespace has a ResourceQuota: jobs are bounded only by the queues.</Empty> : null}
      {quotas.items.length ? (
        <SortableTable ariaLabel="ResourceQuotas" testId="resourcequotas" columns={columns} rows={quotas.items}
          rowKey={(q) => q.metadata.uid} sort={{ key: 'namespace', direction: 'asc' }} />
      ) : null}
    </PageSection>
  );
}
