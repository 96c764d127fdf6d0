// One TrainJob, live (FR-017): header with its state and actions, and a tab per view; the tab is in the
// URL (#/jobs/NS/NAME/TAB). Tabs mount when first opened and stay mounted, so the merged log keeps
// collecting while another tab is shown; tabs that watch or poll do so only while shown.
import {
  Alert, Breadcrumb, BreadcrumbItem, EmptyState, EmptyStateBody, PageSection, Spinner, Tab, TabTitleText, Tabs,
} from '@patternfly/react-core';
import { navigate, href } from '../router.js';
import { useHostfile, useJob, usePods, useRuntime, useWorkload } from './data.js';
import JobHeader from './JobHeader.jsx';
import Overview from './Overview.jsx';
import Configuration from './Configuration.jsx';
import Workers from './Workers.jsx';
import Logs from './Logs.jsx';
import Metrics from './Metrics.jsx';
import Events from './Events.jsx';
import Stacks from './Stacks.jsx';

const TABS = [
  ['overview', 'Overview', Overview], ['configuration', 'Configuration', Configuration], ['workers', 'Workers', Workers],
  ['logs', 'Logs', Logs], ['metrics', 'Metrics', Metrics], ['events', 'Events', Events], ['stacks', 'Stacks', Stacks],
];

function Details({ namespace, name, tab, user }) {
  const { job, loaded, error } = useJob(namespace, name);
  const pods = usePods(namespace, name).items;
  const workload = useWorkload(job);
  const runtime = useRuntime(job);
  const hostfile = useHostfile(namespace, name, pods.length);
  const active = TABS.some(([id]) => id === tab) ? tab : 'overview';

  const crumbs = (
    <Breadcrumb>
      <BreadcrumbItem to={href('jobs')}>Training jobs</BreadcrumbItem>
      <BreadcrumbItem isActive>{namespace}/{name}</BreadcrumbItem>
    </Breadcrumb>
  );
  if (!job) {
    return (
      <PageSection>
        {crumbs}
        {error && <Alert component="h2" variant="danger" isInline title={`Cannot read TrainJob ${namespace}/${name}`}>{error.message}</Alert>}
        {!error && !loaded && <Spinner aria-label="Loading the job" />}
        {!error && loaded && (
          <EmptyState titleText={`TrainJob ${namespace}/${name} not found`} headingLevel="h1">
            <EmptyStateBody>It does not exist, or it was deleted. Its history stays on the History page.</EmptyStateBody>
          </EmptyState>
        )}
      </PageSection>
    );
  }
  const props = { job, pods, workload, runtime, hostfile, user };
  return (
    <>
      <PageSection>
        {crumbs}
        <JobHeader job={job} runtime={runtime} />
      </PageSection>
      <PageSection>
        <Tabs id="job-tabs" activeKey={active} mountOnEnter aria-label="Job details"
          onSelect={(_e, key) => navigate('jobs', namespace, name, String(key))}>
          {TABS.map(([id, title, View]) => (
            <Tab key={id} eventKey={id} id={`job-tab-${id}`} title={<TabTitleText>{title}</TabTitleText>}
              data-testid={`tab-${id}`}>
              <div className="mpijob-details__tab"><View {...props} active={active === id} /></div>
            </Tab>
          ))}
        </Tabs>
      </PageSection>
    </>
  );
}

/** Keyed by the job, so another job's page starts afresh (its own log, its own watches). */
export default function JobDetails(props) {
  return <Details key={`${props.namespace}/${props.name}`} {...props} />;
}
