// The chart components the admin pages use, imported one by one: the package's index also imports
// ChartBoxPlot, whose victory-box-plot is not installed (nor needed), which esbuild cannot resolve.
export { ChartBullet } from '@patternfly/react-charts/dist/esm/victory/components/ChartBullet/ChartBullet.js';
export { Chart } from '@patternfly/react-charts/dist/esm/victory/components/Chart/Chart.js';
export { ChartAxis } from '@patternfly/react-charts/dist/esm/victory/components/ChartAxis/ChartAxis.js';
export { ChartBar } from '@patternfly/react-charts/dist/esm/victory/components/ChartBar/ChartBar.js';
export { ChartStack } from '@patternfly/react-charts/dist/esm/victory/components/ChartStack/ChartStack.js';
export { ChartVoronoiContainer } from '@patternfly/react-charts/dist/esm/victory/components/ChartVoronoiContainer/ChartVoronoiContainer.js';
export { ChartTooltip } from '@patternfly/react-charts/dist/esm/victory/components/ChartTooltip/ChartTooltip.js';
export { ChartLegend } from '@patternfly/react-charts/dist/esm/victory/components/ChartLegend/ChartLegend.js';
