// One job in the table, with the actions its state allows and the user may take in its namespace.
import { MenuToggle, Progress, ProgressMeasureLocation } from '@patternfly/react-core';
import EllipsisVIcon from '@patternfly/react-icons/dist/esm/icons/ellipsis-v-icon.js';
import { ActionsColumn, Td, Tr } from '@patternfly/react-table';
import { memo } from 'react';
import { href } from '../router.js';
import { useCanI } from '../hooks.js';
import { durationSeconds, humanDuration, isFinished } from '../model.js';
import StateLabel from './StateLabel.jsx';
import { TRAINER_GROUP } from './access.js';

function ProgressCell({ row }) {
  const p = row.progress;
  if (!p || p.percent === null) return null;
  const eta = p.etaSeconds !== null && !isFinished(row.state) ? humanDuration(p.etaSeconds) : '';
  const text = eta ? `${p.percent}% · ETA ${eta}` : `${p.percent}%`;
  // The bar alone, the numbers on one short line under it: the column stays narrow.
  return (
    <div className="mpijob-jobs-progress">
      <Progress value={p.percent} size="sm" measureLocation={ProgressMeasureLocation.none} aria-label={`Progress of ${row.name}`}
        valueText={eta ? `${p.percent}%, about ${eta} left` : `${p.percent}%`} />
      <div className="pf-v6-u-font-size-sm pf-v6-u-text-nowrap" aria-hidden="true">{text}</div>
    </div>
  );
}

/** The create page, filled from NS/NAME under a new name. */
export const cloneHref = (namespace, name) => `#/create?clone=${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;

// Short enough for one line: the year only when it is not this one; the full time in the tooltip.
function createdText(ms) {
  const d = new Date(ms);
  const year = d.getFullYear() === new Date().getFullYear() ? undefined : 'numeric';
  return d.toLocaleString(undefined, { year, month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
}

function JobRow({ row, now, mayClone, onAction }) {
  const { namespace, name, state, job } = row;
  const mayPatch = useCanI({ verb: 'patch', group: TRAINER_GROUP, resource: 'trainjobs', namespace });
  const mayDelete = useCanI({ verb: 'delete', group: TRAINER_GROUP, resource: 'trainjobs', namespace });
  const finished = isFinished(state);
  const suspended = Boolean(job.spec && job.spec.suspend);
  const actions = [
    ...(mayPatch && !finished && !suspended ? [{ title: 'Suspend', onClick: () => onAction('suspend', row) }] : []),
    ...(mayPatch && !finished && suspended ? [{ title: 'Resume', onClick: () => onAction('resume', row) }] : []),
    ...(mayClone ? [{ title: 'Clone and edit', onClick: () => { window.location.hash = cloneHref(namespace, name); } }] : []),
  ];
  if (mayDelete) actions.push(...(actions.length ? [{ isSeparator: true }] : []), { title: 'Delete', onClick: () => onAction('delete', row) });
  return (
    <Tr data-job={row.key}>
      <Td dataLabel="Name"><a href={href('jobs', namespace, name)}>{name}</a></Td>
      <Td dataLabel="Namespace">{namespace}</Td>
      <Td dataLabel="Type">{row.type}</Td>
      <Td dataLabel="State"><StateLabel state={state} message={row.message} name={name} /></Td>
      <Td dataLabel="Progress"><ProgressCell row={row} /></Td>
      <Td dataLabel="Nodes">{row.nodes}</Td>
      <Td dataLabel="GPUs">{row.gpus}</Td>
      <Td dataLabel="Queue">{row.queue}</Td>
      <Td dataLabel="Creator">{row.creator}</Td>
      <Td dataLabel="Created" modifier="nowrap"><time dateTime={job.metadata.creationTimestamp} title={new Date(row.created).toString()}>{createdText(row.created)}</time></Td>
      <Td dataLabel="Duration" modifier="nowrap">{humanDuration(durationSeconds(job, now))}</Td>
      <Td isActionCell isStickyColumn stickyMinWidth="3rem" stickyRightOffset="0">
        {actions.length > 0 && (
          <ActionsColumn items={actions} popperProps={{ position: 'right' }} actionsToggle={({ onToggle, isOpen, toggleRef }) => (
            <MenuToggle ref={toggleRef} variant="plain" onClick={onToggle} isExpanded={isOpen} aria-label={`Actions for ${name}`}
              icon={<EllipsisVIcon />} />
          )} />
        )}
      </Td>
    </Tr>
  );
}

export default memo(JobRow);
