// Per-pod CPU, memory and GPU use over the job's life. The usage endpoint is not watchable: it is read
// every POLL_MS while the tab is shown and the job runs, once more when it has finished. The charts'
// code loads only when this tab is first opened.
import { lazy, Suspense, useEffect, useState } from 'react';
import { Alert, Spinner } from '@patternfly/react-core';
import { usage } from '../api.js';
import { useCanI } from '../hooks.js';
import { gpusPerNode, isFinished, jobState } from '../model.js';

const Charts = lazy(() => import('./Charts.jsx'));
const POLL_MS = 5000;

function useUsage(namespace, name, active, finished) {
  const [state, setState] = useState({ data: null, error: null });
  useEffect(() => {
    if (!active) return undefined;
    let live = true;
    let timer = null;
    const read = () => usage(namespace, name).then(
      (data) => live && setState({ data, error: null }),
      (error) => live && setState((s) => ({ ...s, error })),
    ).finally(() => { if (live && !finished) timer = setTimeout(read, POLL_MS); });
    read();
    return () => { live = false; clearTimeout(timer); };
  }, [namespace, name, active, finished]);
  return state;
}

export default function Metrics({ job, active }) {
  const finished = isFinished(jobState(job).state);
  // the server answers usage to whoever may read the pods' metrics (`kubectl top`)
  const may = useCanI({ verb: 'get', group: 'metrics.k8s.io', resource: 'pods', namespace: job.metadata.namespace });
  const { data, error } = useUsage(job.metadata.namespace, job.metadata.name, active && may, finished);
  if (may === false) return <Alert component="h2" variant="info" isInline title="You may not read the metrics of this namespace's pods" />;
  if (error && !data) return <Alert component="h2" variant="warning" isInline title="Usage is not readable">{error.message}</Alert>;
  if (!data) return <Spinner aria-label="Loading usage" />;
  return (
    <Suspense fallback={<Spinner aria-label="Loading charts" />}>
      <Charts data={data} created={Date.parse(job.metadata.creationTimestamp) / 1000} jobName={job.metadata.name}
        gpuJob={gpusPerNode(job) > 0} />
    </Suspense>
  );
}
