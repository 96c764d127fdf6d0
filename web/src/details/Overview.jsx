// The job at a glance: its state and why (waiting, failed), how long each phase took, its progress and
// its numbers.
import {
  Alert, DescriptionList, DescriptionListDescription, DescriptionListGroup, DescriptionListTerm, Progress,
  ProgressStep, ProgressStepper, Title,
} from '@patternfly/react-core';
import { useNow } from '../hooks.js';
import {
  LABEL_PRIORITY, condition, creatorOf, gpus, gpusPerNode, humanDuration, jobState, localTime, numNodes, progressOf,
  queueOf, waitingSentence,
} from '../model.js';
import { parseFailure, phaseTimes, procsPerNode } from './model.js';

const seconds = (from, to) => (from && to ? Math.max(0, (Date.parse(to) - Date.parse(from)) / 1000) : null);

/** The reported time left, counted down from when it was reported. */
function eta(job, progress, now) {
  const at = Date.parse(job.status.trainerStatus.lastUpdatedTime || '');
  const end = (Number.isNaN(at) || at > now ? now : at) + progress.etaSeconds * 1000;
  const left = (end - now) / 1000;
  return left > 0 ? `about ${humanDuration(left)} left (done at ${new Date(end).toLocaleTimeString()})` : 'about to finish';
}

function Phases({ job, workload, pods, state, now }) {
  const t = phaseTimes(job, workload, pods);
  const end = t.finished || new Date(now).toISOString();
  const failed = state === 'Failed';
  const steps = [
    ['queued', 'Queued', t.created, t.admitted || (t.running ? t.running : end), true],
    ['admitted', 'Admitted', t.admitted, t.running || (t.finished ? t.finished : end), Boolean(t.admitted)],
    ['running', 'Running', t.running, end, Boolean(t.running)],
    ['finished', failed ? 'Failed' : 'Finished', t.finished, null, Boolean(t.finished)],
  ];
  const current = steps.filter((s) => s[4]).pop()[0];
  return (
    <ProgressStepper aria-label="Phases of the job" className="pf-v6-u-my-md" data-testid="job-phases">
      {steps.map(([id, title, from, to, reached]) => {
        const lasted = id === 'finished' ? null : seconds(from, to);
        const isCurrent = id === current && !t.finished;
        let variant = reached ? 'success' : 'pending';
        if (isCurrent) variant = 'info';
        if (id === 'finished' && reached) variant = failed ? 'danger' : 'success';
        const description = reached
          ? `${localTime(from)}${lasted !== null ? ` · ${isCurrent ? 'for ' : ''}${humanDuration(lasted)}` : ''}`
          : 'not yet';
        return (
          <ProgressStep key={id} id={`phase-${id}`} titleId={`phase-${id}-title`} variant={variant} isCurrent={isCurrent}
            description={description} aria-label={`${title}: ${description}`}>{title}</ProgressStep>
        );
      })}
    </ProgressStepper>
  );
}

function FailureAlert({ message }) {
  const f = parseFailure(message);
  if (!f.classified) {
    return <Alert component="h2" variant="danger" isInline title="Why it failed" data-testid="failure-reason">{message || 'The job failed.'}</Alert>;
  }
  return (
    <Alert component="h2" variant="danger" isInline title={`Why it failed: ${f.reason}`} data-testid="failure-reason">
      <DescriptionList isHorizontal isCompact>
        <Item term="Class">{f.reason}</Item>
        <Item term="What happened">{f.summary}</Item>
        {f.pod && <Item term="Pod">{f.pod}</Item>}
        {f.rank && <Item term="Rank">{f.rank}</Item>}
        {f.host && <Item term="Host">{f.host}</Item>}
        {f.fix && <Item term="Remedy">{f.fix}</Item>}
        <Item term="Guide">
          <a href={f.guide} target="_blank" rel="noreferrer" data-testid="failure-guide">Troubleshooting: {f.reason}</a>
        </Item>
      </DescriptionList>
    </Alert>
  );
}

const Item = ({ term, children }) => (
  <DescriptionListGroup>
    <DescriptionListTerm>{term}</DescriptionListTerm>
    <DescriptionListDescription>{children}</DescriptionListDescription>
  </DescriptionListGroup>
);

export default function Overview({ job, pods, workload, runtime }) {
  const now = useNow(1000);
  const { state, message } = jobState(job, workload);
  const waiting = state === 'Queued' || state === 'Suspended' ? waitingSentence(job, workload, now) : '';
  const progress = progressOf(job);
  const perNode = gpusPerNode(job);
  const labels = job.metadata.labels || {};
  const failed = condition(job, 'Failed');
  return (
    <>
      <Title headingLevel="h2" className="pf-v6-u-screen-reader">Overview</Title>
      <p data-testid="state-sentence">
        <strong>{state}</strong>{message && !waiting && !failed ? `: ${message}` : ''}
      </p>
      {waiting && (
        <Alert component="h2" variant="info" isInline title="Why it waits" data-testid="waiting-reason" className="pf-v6-u-my-sm">{waiting}</Alert>
      )}
      {failed && <div className="pf-v6-u-my-sm"><FailureAlert message={failed.message} /></div>}
      <Phases job={job} workload={workload} pods={pods} state={state} now={now} />
      {progress && progress.percent !== null && (
        <Progress value={progress.percent} title="Progress" data-testid="job-progress" className="pf-v6-u-mb-md"
          helperText={progress.etaSeconds !== null && !['Succeeded', 'Failed'].includes(state) ? eta(job, progress, now) : undefined} />
      )}
      <DescriptionList columnModifier={{ default: '2Col', lg: '3Col' }} data-testid="job-numbers">
        <Item term="Nodes">{numNodes(job, runtime)}</Item>
        <Item term="Processes per node">{procsPerNode(job, runtime)}</Item>
        <Item term="GPUs">{perNode ? `${gpus(job, runtime)} (${perNode} per node)` : 'none'}</Item>
        <Item term="Queue">{queueOf(job) || (workload && workload.spec.queueName) || '—'}</Item>
        <Item term="Priority">{labels[LABEL_PRIORITY] || (workload && workload.spec.priorityClassName) || 'default'}
          {workload && workload.spec.priority !== undefined ? ` (${workload.spec.priority})` : ''}</Item>
        <Item term="Creator">{creatorOf(job) || '—'}</Item>
        <Item term="Created">{localTime(job.metadata.creationTimestamp)}</Item>
        <Item term="Runtime">{(job.spec.runtimeRef || {}).name || '—'}</Item>
        <Item term="Cluster queue">{(workload && workload.status && workload.status.admission && workload.status.admission.clusterQueue) || '—'}</Item>
        {progress && progress.metrics.map((m) => <Item key={m.name} term={m.name}>{m.value}</Item>)}
      </DescriptionList>
    </>
  );
}
