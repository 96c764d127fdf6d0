// A job's state as a coloured label; for Queued and Failed the sentence that says why, in a popover
// opened by clicking the label (a button, so the keyboard reaches it too).
import { Label, Popover } from '@patternfly/react-core';
import CheckCircleIcon from '@patternfly/react-icons/dist/esm/icons/check-circle-icon.js';
import ExclamationCircleIcon from '@patternfly/react-icons/dist/esm/icons/exclamation-circle-icon.js';
import InProgressIcon from '@patternfly/react-icons/dist/esm/icons/in-progress-icon.js';
import OutlinedClockIcon from '@patternfly/react-icons/dist/esm/icons/outlined-clock-icon.js';
import PauseCircleIcon from '@patternfly/react-icons/dist/esm/icons/pause-circle-icon.js';
import SyncAltIcon from '@patternfly/react-icons/dist/esm/icons/sync-alt-icon.js';

const LOOK = {
  Queued: { color: 'purple', icon: <OutlinedClockIcon /> },
  Starting: { color: 'teal', icon: <InProgressIcon /> },
  Running: { color: 'blue', icon: <SyncAltIcon /> },
  Suspended: { color: 'orange', icon: <PauseCircleIcon /> },
  Succeeded: { color: 'green', icon: <CheckCircleIcon /> },
  Failed: { color: 'red', icon: <ExclamationCircleIcon /> },
};

export default function StateLabel({ state, message, name }) {
  const { color, icon } = LOOK[state] || { color: 'grey', icon: null };
  const text = <span data-testid="job-state">{state}</span>;
  if (!message || (state !== 'Queued' && state !== 'Failed')) return <Label color={color} icon={icon}>{text}</Label>;
  return (
    // No headerContent: PatternFly renders it as a <header> (a second banner landmark) with an h6.
    <Popover bodyContent={<><strong>{name}: {state}</strong><div>{message}</div></>} aria-label={`Why ${name} is ${state}`}>
      <Label color={color} icon={icon} onClick={() => {}} title={message}>{text}</Label>
    </Popover>
  );
}
