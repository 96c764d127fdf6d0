// Small shared pieces of the admin pages: the "you may not see this" and error notices, empty states,
// a section heading, and the job link.
import {
  Alert, EmptyState, EmptyStateBody, Spinner, Title,
} from '@patternfly/react-core';
import { href } from '../router.js';
import { isForbidden } from './data.js';

/** What a failed read means for the user: RBAC's refusal is a state of the page, not a breakage. */
export function ReadProblem({ error, what, headingLevel = 'h3' }) {
  if (!error) return null;
  if (isForbidden(error)) {
    return (
      <Alert isInline isPlain variant="info" title={`You may not see ${what}`} data-testid="forbidden" component={headingLevel}>
        Your account has no permission to read {what}. Ask the cluster administrator for access if you need it.
      </Alert>
    );
  }
  return <Alert isInline variant="danger" title={`Could not read ${what}`} component={headingLevel}>{error.message}</Alert>;
}

export function Loading({ what }) {
  return <Spinner size="lg" aria-label={`Loading ${what}`} />;
}

/** An empty state inside a card or below a heading. */
export function Empty({ title, children, headingLevel = 'h3' }) {
  return (
    <EmptyState titleText={title} headingLevel={headingLevel} variant="sm">
      {children ? <EmptyStateBody>{children}</EmptyStateBody> : null}
    </EmptyState>
  );
}

export function SectionTitle({ id, children }) {
  return <Title headingLevel="h2" size="lg" id={id} className="pf-v6-u-mb-sm">{children}</Title>;
}

/** The TrainJob's page. */
export function JobLink({ namespace, name }) {
  if (!name) return <span>unknown</span>;
  return <a href={href('jobs', namespace, name)}>{name}</a>;
}

/** A Date, or an RFC 3339 string, as the browser's local date and time (minutes). */
export function when(t) {
  if (!t) return '';
  const d = t instanceof Date ? t : new Date(t);
  if (Number.isNaN(d.getTime())) return '';
  const thisYear = d.getFullYear() === new Date().getFullYear(); // the year only when it is not this one
  return d.toLocaleString(undefined, { year: thisYear ? undefined : 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
}
