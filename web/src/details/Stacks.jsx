// Every rank's current stack, merged (docs/debugging.md): identical stacks once with the ranks that share
// them, the odd ones out first, as `mpijob debug stacks` prints them. Read on demand only: each read pauses
// every rank for a moment, and needs the right to exec into the job's pods.
import { useState } from 'react';
import { Alert, Button, Content, Spinner, Title } from '@patternfly/react-core';
import { send } from '../api.js';
import { useCanI } from '../hooks.js';
import { jobState } from '../model.js';
import { execAttributes, frameText, stacksPath, summary } from './stacks.js';

export default function Stacks({ job }) {
  const { namespace, name } = job.metadata;
  const may = useCanI(execAttributes(namespace));
  const running = jobState(job).state === 'Running';
  const [read, setRead] = useState({ dump: null, error: null, busy: false });

  const ask = () => {
    setRead((r) => ({ ...r, busy: true }));
    send('POST', stacksPath(namespace, name)).then(
      (dump) => setRead({ dump, error: null, busy: false }),
      (error) => setRead({ dump: null, error, busy: false }));
  };
  const { dump, error, busy } = read;
  return (
    <>
      <Content component="p" className="pf-v6-u-mb-sm">
        Every rank&apos;s current stack, read by the server (py-spy for Python ranks, eu-stack for others) and
        merged: ranks caught in the same stack are one group, the odd ones out first.
      </Content>
      {may === false && (
        <Alert component="h2" variant="info" isInline title="Reading stacks takes what kubectl exec takes"
          className="pf-v6-u-mb-sm">You may not create pods/exec in namespace {namespace}.</Alert>
      )}
      <Button variant="secondary" onClick={ask} isDisabled={!may || !running || busy} data-testid="read-stacks"
        className="pf-v6-u-mb-md">{dump ? 'Read again' : 'Read stacks'}</Button>
      {!running && <Content component="small" className="pf-v6-u-ml-sm">Only a running job has stacks.</Content>}
      {busy && <Spinner size="md" aria-label="Reading the ranks' stacks" className="pf-v6-u-ml-sm" />}
      {error && <Alert component="h2" variant="danger" isInline title="The stacks could not be read">{error.message}</Alert>}
      {dump && (
        <div data-testid="stacks">
          <Content component="p" className="pf-v6-u-color-200">{summary(dump)}</Content>
          {dump.groups.map((g) => (
            <section key={g.ranks} className="mpijob-stack" data-testid="stack-group">
              <Title headingLevel="h3" size="md">{g.title} <small className="pf-v6-u-color-200">in {g.pods.join(', ')}</small></Title>
              <ol className="mpijob-stack__frames">
                {g.frames.map((f, i) => <li key={i}>{frameText(f)}</li>)}
              </ol>
            </section>
          ))}
          {dump.errors.length > 0 && (
            <Alert component="h3" variant="warning" isInline title={`${dump.errors.length} rank(s) not read`}>
              <ul>{dump.errors.map((e) => <li key={e.rank}>rank {e.rank} (pod {e.pod}): {e.message}</li>)}</ul>
            </Alert>
          )}
        </div>
      )}
    </>
  );
}
