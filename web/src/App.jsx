// The shell: masthead with the user, navigation, and the page the hash route names.
import { lazy, Suspense, useState } from 'react';
import {
  Button, Masthead, MastheadBrand, MastheadContent, MastheadLogo, MastheadMain, MastheadToggle, Nav, NavItem, NavList,
  Page, PageSidebar, PageSidebarBody, PageToggleButton, Spinner, Toolbar, ToolbarContent, ToolbarItem,
} from '@patternfly/react-core';
import { logout } from './api.js';
import { useCanI } from './hooks.js';
import { useRoute } from './router.js';
import JobsList from './jobs/JobsList.jsx';

const JobDetails = lazy(() => import('./details/JobDetails.jsx'));
const CreateJob = lazy(() => import('./create/CreateJob.jsx'));
const Queues = lazy(() => import('./admin/Queues.jsx'));
const Cluster = lazy(() => import('./admin/Cluster.jsx'));
const History = lazy(() => import('./admin/History.jsx'));
const DocPage = lazy(() => import('./docs/DocPage.jsx'));

function page(route, user) {
  const { page: name, rest, query } = route;
  if (name === 'jobs' && rest.length >= 2) return <JobDetails namespace={rest[0]} name={rest[1]} tab={rest[2] || 'overview'} user={user} />;
  if (name === 'create') return <CreateJob clone={query.get('clone') || ''} user={user} />;
  if (name === 'queues') return <Queues user={user} />;
  if (name === 'cluster') return <Cluster user={user} />;
  if (name === 'history') return <History user={user} />;
  if (name === 'docs') return <DocPage path={rest.join('/') || 'dashboard.md'} />;
  return <JobsList user={user} />;
}

export default function App({ user }) {
  const route = useRoute();
  const [sidebarOpen, setSidebarOpen] = useState(true);
  const seesCluster = useCanI({ verb: 'list', resource: 'nodes' });
  const nav = [
    ['jobs', 'Training jobs'], ['create', 'Create job'], ['queues', 'Queues'],
    ...(seesCluster ? [['cluster', 'Cluster']] : []), ['history', 'History'],
  ];
  const masthead = (
    <Masthead>
      <MastheadMain>
        <MastheadToggle>
          <PageToggleButton variant="plain" aria-label="Navigation" isSidebarOpen={sidebarOpen}
            onSidebarToggle={() => setSidebarOpen(!sidebarOpen)} />
        </MastheadToggle>
        <MastheadBrand><MastheadLogo href="#/jobs">mpijob</MastheadLogo></MastheadBrand>
      </MastheadMain>
      <MastheadContent>
        <Toolbar isFullHeight isStatic>
          <ToolbarContent>
            <ToolbarItem align={{ default: 'alignEnd' }}><span data-testid="user">{user.user}</span></ToolbarItem>
            <ToolbarItem>
              <Button variant="secondary" onClick={() => logout().then(() => window.location.reload())}>Log out</Button>
            </ToolbarItem>
          </ToolbarContent>
        </Toolbar>
      </MastheadContent>
    </Masthead>
  );
  const sidebar = (
    <PageSidebar isSidebarOpen={sidebarOpen}>
      <PageSidebarBody>
        <Nav aria-label="Main">
          <NavList>
            {nav.map(([id, label]) => (
              <NavItem key={id} itemId={id} isActive={route.page === id} to={`#/${id}`}>{label}</NavItem>
            ))}
          </NavList>
        </Nav>
      </PageSidebarBody>
    </PageSidebar>
  );
  return (
    <Page masthead={masthead} sidebar={sidebar} isManagedSidebar={false} mainContainerId="main" mainTabIndex={0}>
      <Suspense fallback={<Spinner aria-label="Loading" />}>{page(route, user)}</Suspense>
    </Page>
  );
}
