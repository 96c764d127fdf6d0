// Stacked bars per day, one colour per namespace: the jobs that ended, and the GPU-hours they used (or,
// when no job held a GPU in the range, the CPU-hours). Each chart has a title and a description for
// screen readers; the totals table below carries the same figures as text.
import { Alert, Title } from '@patternfly/react-core';
import {
  Chart, ChartAxis, ChartBar, ChartStack, ChartVoronoiContainer,
} from './charts.js';
import { Empty } from './common.jsx';
import { formatHours, total } from './historyModel.js';

const shortDay = (day) => new Date(`${day}T12:00:00`).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });

function StackedByDay({ title, desc, series, namespaces, days, unit, format, integer = false }) {
  const every = Math.max(1, Math.ceil(days.length / 10)); // about ten date ticks, whatever the range
  const ticks = days.map((_, i) => i + 1).filter((i) => (days.length - i) % every === 0);
  return (
    <div className="mpijob-history-chart">
      <Chart
        ariaTitle={title}
        ariaDesc={desc}
        containerComponent={(
          <ChartVoronoiContainer constrainToVisibleArea voronoiDimension="x"
            labels={({ datum }) => (datum.y ? `${datum.name}: ${format(datum.y)} ${unit}` : null)} />
        )}
        domainPadding={{ x: [12, 12] }}
        legendData={namespaces.map((ns) => ({ name: ns }))}
        legendPosition="bottom-left"
        legendAllowWrap
        height={300}
        width={900}
        padding={{ top: 20, bottom: 90, left: 60, right: 30 }}
        themeColor="multiOrdered"
      >
        <ChartAxis tickValues={ticks} tickFormat={(i) => shortDay(days[i - 1])} fixLabelOverlap />
        <ChartAxis dependentAxis showGrid tickFormat={(v) => (integer && !Number.isInteger(v) ? '' : format(v))} />
        <ChartStack>
          {namespaces.map((ns) => (
            <ChartBar key={ns} name={ns}
              data={days.map((d, i) => ({ x: i + 1, y: series.get(ns).get(d), name: `${ns}, ${shortDay(d)}` }))} />
          ))}
        </ChartStack>
      </Chart>
    </div>
  );
}

/** The two charts for `per` (historyModel.perDay) over `rangeText` ("the last 7 days"). */
export function HistoryCharts({ per, rangeText }) {
  const { namespaces, days } = per;
  if (!namespaces.length) {
    return <Empty title="No job ended in this range">Choose a longer range, or run a job: it is recorded when it ends.</Empty>;
  }
  const jobs = total(per.jobs);
  const gpu = total(per.gpuHours);
  const cpu = total(per.cpuHours);
  const byNs = (series, format) => namespaces.map((ns) => `${ns} ${format([...series.get(ns).values()].reduce((a, b) => a + b, 0))}`).join(', ');
  return (
    <>
      <Title headingLevel="h3" size="md" className="pf-v6-u-mb-sm">Jobs per namespace per day</Title>
      <StackedByDay title={`Jobs ended per namespace per day, ${rangeText}`}
        desc={`${jobs} jobs ended ${rangeText}: ${byNs(per.jobs, String)}.`}
        series={per.jobs} namespaces={namespaces} days={days} unit="jobs" format={String} integer />
      {gpu > 0 ? (
        <>
          <Title headingLevel="h3" size="md" className="pf-v6-u-mt-lg pf-v6-u-mb-sm">GPU-hours per namespace per day</Title>
          <StackedByDay title={`GPU-hours per namespace per day, ${rangeText}`}
            desc={`${formatHours(gpu)} GPU-hours held by jobs that ended ${rangeText}: ${byNs(per.gpuHours, formatHours)}.`}
            series={per.gpuHours} namespaces={namespaces} days={days} unit="GPU-hours" format={formatHours} />
        </>
      ) : (
        <>
          <Alert isInline isPlain variant="info" className="pf-v6-u-mt-lg" title={`No job held a GPU ${rangeText}`} data-testid="no-gpu-jobs" component="h3">
            {per.cpuKnown ? 'The CPU time the jobs used is shown instead.' : 'The records have no CPU time either (pods without cgroups, in the process sandbox).'}
          </Alert>
          {per.cpuKnown ? (
            <>
              <Title headingLevel="h3" size="md" className="pf-v6-u-mt-md pf-v6-u-mb-sm">CPU-hours per namespace per day</Title>
              <StackedByDay title={`CPU-hours per namespace per day, ${rangeText}`}
                desc={`${formatHours(cpu)} CPU-hours used by jobs that ended ${rangeText}: ${byNs(per.cpuHours, formatHours)}.`}
                series={per.cpuHours} namespaces={namespaces} days={days} unit="CPU-hours" format={formatHours} />
            </>
          ) : null}
        </>
      )}
    </>
  );
}
