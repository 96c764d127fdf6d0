// The job's name, state and what the user may do to it. Buttons appear only when a
// SelfSubjectAccessReview allows the verb, so the page never offers what RBAC would refuse.
import { useState } from 'react';
import {
  Alert, Button, Flex, FlexItem, Label, Modal, ModalBody, ModalFooter, ModalHeader, Title,
} from '@patternfly/react-core';
import { mergePatch, remove, trainjobPath } from '../api.js';
import { useCanI } from '../hooks.js';
import { isFinished, jobState } from '../model.js';
import { navigate } from '../router.js';

const COLORS = { Queued: 'grey', Starting: 'blue', Running: 'teal', Suspended: 'orange', Succeeded: 'green', Failed: 'red' };

export function StateLabel({ state }) {
  return <Label color={COLORS[state] || 'grey'} data-testid="job-state">{state}</Label>;
}

export default function JobHeader({ job }) {
  const { namespace, name } = job.metadata;
  const { state } = jobState(job);
  const attrs = { group: 'trainer.kubeflow.org', resource: 'trainjobs', namespace, name };
  const canPatch = useCanI({ ...attrs, verb: 'patch' });
  const canDelete = useCanI({ ...attrs, verb: 'delete' });
  const canCreate = useCanI({ ...attrs, name: '', verb: 'create' }); // a clone is created beside it
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState(null);
  const [confirming, setConfirming] = useState(false);

  const act = async (what) => {
    setBusy(true);
    setProblem(null);
    try { await what(); } catch (err) { setProblem(err); } finally { setBusy(false); }
  };
  const suspend = (value) => act(() => mergePatch(trainjobPath(namespace, name), { spec: { suspend: value } }));
  const del = () => act(async () => { await remove(trainjobPath(namespace, name)); navigate('jobs'); });
  const suspended = Boolean(job.spec.suspend);

  return (
    <>
      <Flex className="mpijob-details__header" alignItems={{ default: 'alignItemsCenter' }} spaceItems={{ default: 'spaceItemsMd' }}>
        <FlexItem><Title headingLevel="h1" data-testid="job-name">{name}</Title></FlexItem>
        <FlexItem><StateLabel state={state} /></FlexItem>
        <FlexItem className="pf-v6-u-color-200">namespace {namespace}</FlexItem>
        <FlexItem align={{ default: 'alignRight' }}>
          <Flex spaceItems={{ default: 'spaceItemsSm' }}>
            {canPatch && !isFinished(state) && (
              suspended
                ? <Button variant="secondary" isDisabled={busy} onClick={() => suspend(false)} data-testid="resume-job">Resume</Button>
                : <Button variant="secondary" isDisabled={busy} onClick={() => suspend(true)} data-testid="suspend-job">Suspend</Button>
            )}
            {canCreate && (
              <Button variant="secondary" component="a" href={`#/create?clone=${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`}
                data-testid="clone-job">Clone and edit</Button>
            )}
            {canDelete && (
              <Button variant="danger" isDisabled={busy} onClick={() => setConfirming(true)} data-testid="delete-job">Delete</Button>
            )}
          </Flex>
        </FlexItem>
      </Flex>
      {problem && (
        <Alert component="h2" variant="danger" isInline title="The server refused" className="pf-v6-u-mt-sm">{problem.message}</Alert>
      )}
      <Modal variant="small" isOpen={confirming} onClose={() => setConfirming(false)}
        aria-labelledby="delete-job-title" aria-describedby="delete-job-body">
        <ModalHeader title={`Delete TrainJob ${name}?`} labelId="delete-job-title" titleIconVariant="warning" />
        <ModalBody id="delete-job-body">
          Its pods stop at once, and its pods, logs and events go with it. The History page keeps its record.
        </ModalBody>
        <ModalFooter>
          <Button variant="danger" onClick={() => { setConfirming(false); del(); }} data-testid="confirm-delete">Delete</Button>
          <Button variant="link" onClick={() => setConfirming(false)}>Cancel</Button>
        </ModalFooter>
      </Modal>
    </>
  );
}
