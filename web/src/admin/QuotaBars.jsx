// A queue's quota per resource: a bar of what admitted jobs use against the nominal quota, and, past it,
// how much is borrowed from the cohort (the bar turns to a warning: that part can be reclaimed).
import { Progress, ProgressMeasureLocation, ProgressSize, ProgressVariant } from '@patternfly/react-core';
import { formatAmount, formatNumber, resourceLabel } from './quantity.js';

function limits(row, inCohort) {
  if (!inCohort) return '';
  const parts = [];
  parts.push(row.borrowingLimit === null ? 'may borrow without limit' : `may borrow ${formatAmount(row.resource, row.borrowingLimit)}`);
  if (row.lendingLimit !== null) parts.push(`lends at most ${formatAmount(row.resource, row.lendingLimit)}`);
  return parts.join(' · ');
}

export function QuotaBar({ row, showFlavor, inCohort, queue }) {
  const { resource, nominal, used } = row;
  const borrowed = row.borrowed || Math.max(0, used - nominal);
  const percent = nominal > 0 ? Math.min(100, (used / nominal) * 100) : (used > 0 ? 100 : 0);
  const title = `${resourceLabel(resource)}${showFlavor ? ` (${row.flavor})` : ''}`;
  // Counts and cores read well bare before "of 8 cores"; bytes need their unit on both sides.
  const amount = (v) => (resource === 'memory' ? formatAmount(resource, v) : formatNumber(resource, v));
  const label = `${amount(used)} of ${formatAmount(resource, nominal)}${borrowed > 0 ? `, ${amount(borrowed)} borrowed` : ''}`;
  const extra = limits(row, inCohort);
  return (
    <div className="mpijob-quota">
      <Progress
        value={percent}
        title={title}
        label={label}
        valueText={label}
        aria-label={`${queue} ${title}: ${label}`}
        size={ProgressSize.sm}
        measureLocation={ProgressMeasureLocation.outside}
        variant={borrowed > 0 ? ProgressVariant.warning : undefined}
      />
      {extra ? <div className="pf-v6-u-font-size-xs pf-v6-u-text-color-subtle">{extra}</div> : null}
    </div>
  );
}

export function QuotaBars({ rows, inCohort, queue }) {
  if (!rows.length) return <span className="pf-v6-u-text-color-subtle">no quota</span>;
  const flavors = new Set(rows.map((r) => r.flavor));
  return (
    <div className="mpijob-quota-list">
      {rows.map((row) => (
        <QuotaBar key={`${row.flavor}/${row.resource}`} row={row} showFlavor={flavors.size > 1} inCohort={inCohort} queue={queue} />
      ))}
    </div>
  );
}
