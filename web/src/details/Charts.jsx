// The usage charts (a chunk of its own: Victory is large). One line per pod; x is the time since the job
// was created. Each chart has a visible heading and an SVG title and description for screen readers.
import { useEffect, useRef, useState } from 'react';
import { Content, Title } from '@patternfly/react-core';
// Each component from its own module: the package's index also pulls in ChartBoxPlot, whose
// victory-box-plot is not installed.
import { Chart } from '@patternfly/react-charts/dist/esm/victory/components/Chart/Chart.js';
import { ChartAxis } from '@patternfly/react-charts/dist/esm/victory/components/ChartAxis/ChartAxis.js';
import { ChartGroup } from '@patternfly/react-charts/dist/esm/victory/components/ChartGroup/ChartGroup.js';
import { ChartLine } from '@patternfly/react-charts/dist/esm/victory/components/ChartLine/ChartLine.js';
import { ChartScatter } from '@patternfly/react-charts/dist/esm/victory/components/ChartScatter/ChartScatter.js';
import { getTheme } from '@patternfly/react-charts/dist/esm/victory/components/ChartUtils/chart-theme.js';
import { ChartThemeColor } from '@patternfly/react-charts/dist/esm/victory/components/ChartTheme/ChartThemeColor.js';
import { ChartVoronoiContainer } from '@patternfly/react-charts/dist/esm/victory/components/ChartVoronoiContainer/ChartVoronoiContainer.js';
import { humanDuration } from '../model.js';
import { humanBytes } from './model.js';

const CPU = 1;
const MEMORY = 2;
const GPU_UTIL = 3;
const GPU_MEMORY = 4;

const COLORS = getTheme(ChartThemeColor.multiUnordered).line.colorScale;
const colorOf = (i) => COLORS[i % COLORS.length];

const cores = (v) => (v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toFixed(3).replace(/0+$/, '').replace(/\.$/, ''));
const percent = (v) => `${Math.round(v)}%`;

/** The element's width, followed as the window resizes (Victory draws at a fixed size). */
function useWidth() {
  const ref = useRef(null);
  const [width, setWidth] = useState(600);
  useEffect(() => {
    if (!ref.current) return undefined;
    const observer = new ResizeObserver(([entry]) => setWidth(Math.max(320, Math.floor(entry.contentRect.width))));
    observer.observe(ref.current);
    return () => observer.disconnect();
  }, []);
  return [ref, width];
}

/** About four round y ticks (bytes: round in the binary unit the largest value reads in). */
function ticksFor(series, bytes) {
  const max = Math.max(0, ...series.flatMap((s) => s.points.map((p) => p.y)));
  if (!(max > 0)) return undefined;
  const unit = bytes ? 1024 ** Math.min(4, Math.floor(Math.log(max) / Math.log(1024))) : 1;
  const raw = max / unit / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((v) => v >= raw) * unit;
  return Array.from({ length: Math.ceil(max / step) + 1 }, (_, i) => i * step);
}

/** Round time ticks (10s, 30s, 1m, 5m, ...) up to the last sample. */
function timeTicks(series) {
  const max = Math.max(0, ...series.flatMap((s) => s.points.map((p) => p.x)));
  if (!(max > 0)) return [0];
  const step = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400]
    .find((v) => max / v <= 6) || 86400 * Math.ceil(max / 86400 / 6);
  return Array.from({ length: Math.floor(max / step) + 1 }, (_, i) => i * step);
}

function UsageChart({ id, title, unit, axis, format, series, describe, bytes = false }) {
  const [ref, width] = useWidth();
  const rows = Math.ceil(series.length / Math.max(1, Math.floor((width - 80) / 200)));
  const height = 300 + rows * 24;
  if (!series.some((s) => s.points.length)) {
    return (
      <section className="mpijob-chart" aria-labelledby={`${id}-title`} data-testid={`chart-${id}`}>
        <Title headingLevel="h2" size="lg" id={`${id}-title`}>{title}</Title>
        <Content component="p">No samples: the pods ended before a rate could be measured, or have not run yet.</Content>
      </section>
    );
  }
  const last = series.map((s) => s.points.length && `${s.name} ${format(s.points[s.points.length - 1].y)}`).filter(Boolean);
  return (
    <section className="mpijob-chart" aria-labelledby={`${id}-title`} data-testid={`chart-${id}`}>
      <Title headingLevel="h2" size="lg" id={`${id}-title`}>{title}</Title>
      <div ref={ref} className="mpijob-chart__plot">
        <Chart
          ariaTitle={title}
          ariaDesc={`${describe}, one line per pod, over the time since the job was created. Latest: ${last.join('; ') || 'no samples yet'}.`}
          containerComponent={(
            <ChartVoronoiContainer constrainToVisibleArea
              labels={({ datum }) => `${datum.childName}: ${format(datum.y)} ${unit} at ${humanDuration(datum.x)}`} />
          )}
          legendData={series.map((s, i) => ({ name: s.name, symbol: { fill: colorOf(i) } }))}
          legendPosition="bottom"
          legendAllowWrap
          height={height}
          width={width}
          padding={{ top: 20, right: 40, bottom: 80 + rows * 24, left: 90 }}
          themeColor={ChartThemeColor.multiUnordered}
          minDomain={{ y: 0 }}
        >
          <ChartAxis label="time since the job was created" tickFormat={(t) => humanDuration(t)} fixLabelOverlap
            tickValues={timeTicks(series)}
            fixAxisLabelHeight />
          <ChartAxis dependentAxis showGrid label={axis} tickFormat={format} tickValues={ticksFor(series, bytes)}
            style={{ axisLabel: { padding: 65 } }} />
          <ChartGroup>
            {series.map((s, i) => <ChartLine key={s.name} name={s.name} data={s.points} style={{ data: { stroke: colorOf(i) } }} />)}
          </ChartGroup>
          {/* a pod sampled once or twice (a short job) has no line to speak of: show its points */}
          {series.map((s, i) => s.points.length > 0 && s.points.length < 3 && (
            <ChartScatter key={`${s.name}-points`} name={`${s.name}-points`} data={s.points} size={4}
              style={{ data: { fill: colorOf(i) } }} />
          ))}
        </Chart>
      </div>
    </section>
  );
}

/** One series per pod: the points where `column` has a value. */
function seriesOf(data, column, created, jobName) {
  const order = (p) => (p.role === 'launcher' ? 0 : 1);
  return [...data.pods].sort((a, b) => order(a) - order(b) || a.name.localeCompare(b.name)).map((p) => ({
    name: p.name.startsWith(`${jobName}-`) ? p.name.slice(jobName.length + 1) : p.name,
    points: p.points.filter((pt) => pt[column] !== null && pt[column] !== undefined)
      .map((pt) => ({ x: Math.max(0, pt[0] - created), y: pt[column] })),
  }));
}

export default function Charts({ data, created, jobName, gpuJob }) {
  if (!data.pods || !data.pods.length) {
    return <Content component="p" data-testid="no-usage">No usage yet: it is sampled while the job&apos;s pods run.</Content>;
  }
  const of = (column) => seriesOf(data, column, created, jobName);
  const gpuUtil = of(GPU_UTIL);
  const gpuMemory = of(GPU_MEMORY);
  const hasGpus = gpuJob || gpuUtil.some((s) => s.points.length) || gpuMemory.some((s) => s.points.length);
  return (
    <div className="mpijob-charts">
      <UsageChart id="cpu" title="CPU" unit="cores" axis="CPU (cores)" format={cores} series={of(CPU)}
        describe="CPU cores used by each pod" />
      <UsageChart id="memory" title="Memory" unit="" axis="memory" format={humanBytes} series={of(MEMORY)} bytes
        describe="Memory used by each pod" />
      {hasGpus ? (
        <>
          <UsageChart id="gpu" title="GPU utilization" unit="" axis="GPU utilization (%)" format={percent} series={gpuUtil}
            describe="Utilization of the GPUs of each pod, in percent" />
          <UsageChart id="gpu-memory" title="GPU memory" unit="" axis="GPU memory" format={humanBytes} series={gpuMemory} bytes
            describe="GPU memory used by each pod" />
        </>
      ) : (
        <section className="mpijob-chart" aria-labelledby="gpu-title" data-testid="chart-gpu">
          <Title headingLevel="h2" size="lg" id="gpu-title">GPU utilization</Title>
          <Content component="p" data-testid="no-gpus">This job has no GPUs: no GPU utilization or GPU memory to chart.</Content>
        </section>
      )}
    </div>
  );
}
