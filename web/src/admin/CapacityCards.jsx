// One card per resource: the machine's capacity and allocatable, what holding pods were allocated and
// what is used now, as a bullet chart (the bar is the allocation and the use, the band behind it what
// can be allocated) and as numbers.
import {
  Card, CardBody, CardTitle, DescriptionList, DescriptionListDescription, DescriptionListGroup, DescriptionListTerm, Gallery,
} from '@patternfly/react-core';
import { ChartBullet } from './charts.js';
import { GPU } from '../model.js';
import { formatAmount, resourceLabel } from './quantity.js';

const pct = (part, whole) => (whole > 0 ? ` (${Math.round((part / whole) * 100)}%)` : '');
// Memory is charted in GiB: bytes make axis ticks nobody reads.
const chartUnit = (resource, v) => (resource === 'memory' ? v / 2 ** 30 : v);
const unitName = (resource) => (resource === 'memory' ? 'GiB' : resource === 'cpu' ? 'cores' : resource === GPU ? 'GPUs' : '');

function ResourceCard({ resource, capacity, allocatable, allocated, used, usedNote }) {
  const label = resourceLabel(resource);
  const u = (v) => Math.round(chartUnit(resource, v) * 100) / 100;
  const measures = [{ name: 'Allocated', y: u(allocated) }];
  if (used !== null) measures.push({ name: 'Used now', y: u(used) });
  const ranges = [{ name: 'Allocatable', y: u(allocatable) }];
  const top = Math.max(capacity, allocatable, allocated, used || 0) || 1;
  const desc = `${label}: ${formatAmount(resource, allocated)} allocated to pods of ${formatAmount(resource, allocatable)} allocatable`
    + `${used !== null ? `, ${formatAmount(resource, used)} used now` : ''}; capacity ${formatAmount(resource, capacity)}.`;
  return (
    <Card isCompact data-testid={`capacity-${resource}`}>
      <CardTitle component="h3">{label}</CardTitle>
      <CardBody>
        <div className="mpijob-bullet">
          <ChartBullet
            ariaTitle={`${label} capacity and allocation`}
            ariaDesc={desc}
            constrainToVisibleArea
            height={140}
            width={360}
            padding={{ top: 20, bottom: 60, left: 20, right: 30 }}
            labels={({ datum }) => `${datum.name}: ${datum.y} ${unitName(resource)}`}
            maxDomain={{ y: u(top) }}
            primarySegmentedMeasureData={measures}
            primarySegmentedMeasureLegendData={measures.map((m) => ({ name: m.name }))}
            qualitativeRangeData={ranges}
            qualitativeRangeLegendData={ranges.map((r) => ({ name: r.name }))}
            comparativeWarningMeasureData={capacity > allocatable ? [{ name: 'Capacity', y: u(capacity) }] : undefined}
            comparativeWarningMeasureLegendData={capacity > allocatable ? [{ name: 'Capacity' }] : undefined}
            legendPosition="bottom-left"
          />
        </div>
        <DescriptionList isCompact columnModifier={{ default: '2Col' }} className="mpijob-capacity-numbers">
          <DescriptionListGroup>
            <DescriptionListTerm>Capacity</DescriptionListTerm>
            <DescriptionListDescription>{formatAmount(resource, capacity)}</DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>Allocatable</DescriptionListTerm>
            <DescriptionListDescription>{formatAmount(resource, allocatable)}</DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>Allocated</DescriptionListTerm>
            <DescriptionListDescription data-testid={`allocated-${resource}`}>{formatAmount(resource, allocated)}{pct(allocated, allocatable)}</DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>Used now</DescriptionListTerm>
            <DescriptionListDescription>{used === null ? usedNote : `${formatAmount(resource, used)}${pct(used, allocatable)}`}</DescriptionListDescription>
          </DescriptionListGroup>
        </DescriptionList>
      </CardBody>
    </Card>
  );
}

/** resources: [{resource, capacity, allocatable, allocated, used (null: not measured), usedNote}]. */
export function CapacityCards({ resources }) {
  return (
    <Gallery hasGutter minWidths={{ default: '100%', lg: '30%' }}>
      {resources.map((r) => <ResourceCard key={r.resource} {...r} />)}
    </Gallery>
  );
}
