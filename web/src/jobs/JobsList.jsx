// #/jobs: every TrainJob the user may see, live from watches, with filters, sorting, pages and the
// actions the user may take on each.
import {
  Alert, AlertActionCloseButton, AlertGroup, Bullseye, Button, EmptyState, EmptyStateActions, EmptyStateBody,
  EmptyStateFooter, Flex, FlexItem, PageSection, Pagination, Spinner, Title,
} from '@patternfly/react-core';
import SearchIcon from '@patternfly/react-icons/dist/esm/icons/search-icon.js';
import CubesIcon from '@patternfly/react-icons/dist/esm/icons/cubes-icon.js';
import { InnerScrollContainer, Table, Tbody, Th, Thead, Tr } from '@patternfly/react-table';
import { useCallback, useEffect, useMemo, useState } from 'react';
import { mergePatch, remove, trainjobPath } from '../api.js';
import { useNow } from '../hooks.js';
import { useCreatableNamespaces } from './access.js';
import DeleteModal from './DeleteModal.jsx';
import JobRow from './JobRow.jsx';
import JobsToolbar from './JobsToolbar.jsx';
import { activeFilterCount, EMPTY_FILTERS, matches, options, sortRows, toRow } from './rows.js';
import { useJobs, useVisibleNamespaces } from './useJobs.js';

// [header, sort key or null, width modifier]; the order of the cells in JobRow. Short columns fit their
// content so that the twelve fit a laptop's screen beside the navigation.
const COLUMNS = [
  ['Name', 'name', 'wrap'], ['Namespace', 'namespace', 'wrap'], ['Type', null, 'fitContent'], ['State', 'state', 'fitContent'],
  ['Progress', null, 'wrap'], ['Nodes', 'nodes', 'fitContent'], ['GPUs', 'gpus', 'fitContent'], ['Queue', null, 'wrap'],
  ['Creator', null, 'wrap'], ['Created', 'created', 'fitContent'], ['Duration', 'duration', 'fitContent'],
];

export default function JobsList() {
  const visible = useVisibleNamespaces();
  if (!visible) return <PageSection><Bullseye><Spinner aria-label="Loading jobs" /></Bullseye></PageSection>;
  return <JobsPage visible={visible} />;
}

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

function Header({ canCreate }) {
  return (
    <PageSection>
      <Flex justifyContent={{ default: 'justifyContentSpaceBetween' }} alignItems={{ default: 'alignItemsCenter' }}>
        <FlexItem><Title headingLevel="h1">Training jobs</Title></FlexItem>
        {canCreate && <FlexItem><Button variant="primary" component="a" href="#/create">Create job</Button></FlexItem>}
      </Flex>
    </PageSection>
  );
}

function JobsPage({ visible }) {
  const { jobs, runtimes, workloads, loaded, error } = useJobs(visible);
  const creatable = useCreatableNamespaces(visible);
  const canCreate = Boolean(creatable && creatable.length);
  const now = useNow(1000);
  const [filters, setFiltersState] = useState(EMPTY_FILTERS);
  const [sort, setSort] = useState({ by: 'created', direction: 'desc' });
  const [page, setPage] = useState(1);
  const [perPage, setPerPage] = useState(50);
  const [deleting, setDeleting] = useState(null);
  const [alerts, setAlerts] = useState([]);

  const setFilters = (f) => { setFiltersState(f); setPage(1); };
  const rows = useMemo(() => jobs.map((job) => toRow(job, runtimes, workloads)), [jobs, runtimes, workloads]);
  const choices = useMemo(() => options(rows), [rows]);
  const filtered = useMemo(() => rows.filter((r) => matches(r, filters)), [rows, filters]);
  // Durations grow every second: only a duration sort needs re-sorting as the clock ticks.
  const sorted = useMemo(() => sortRows(filtered, sort.by, sort.direction, now),
    // eslint-disable-next-line react-hooks/exhaustive-deps -- now only while sorting by duration: other sorts ignore the clock
    [filtered, sort, sort.by === 'duration' ? now : 0]);
  const lastPage = Math.max(1, Math.ceil(sorted.length / perPage));
  useEffect(() => { if (page > lastPage) setPage(lastPage); }, [page, lastPage]);
  const shown = sorted.slice((page - 1) * perPage, page * perPage);

  const say = (variant, title) => setAlerts((a) => [...a, { key: Date.now() + Math.random(), variant, title }]);
  const onAction = useCallback(async (action, row) => {
    if (action === 'delete') { setDeleting(row); return; }
    const suspend = action === 'suspend';
    try {
      await mergePatch(trainjobPath(row.namespace, row.name), { spec: { suspend } });
    } catch (err) {
      say('danger', `Could not ${action} ${row.name}: ${err.message}`);
    }
  }, []);
  const confirmDelete = async (row) => {
    setDeleting(null);
    try {
      await remove(trainjobPath(row.namespace, row.name));
      say('success', `Deleted ${row.name}`);
    } catch (err) {
      say('danger', `Could not delete ${row.name}: ${err.message}`);
    }
  };

  const pagination = {
    itemCount: sorted.length, perPage, page,
    onSetPage: (_e, p) => setPage(p), onPerPageSelect: (_e, n) => { setPerPage(n); setPage(1); },
    perPageOptions: [10, 20, 50, 100, 200].map((n) => ({ title: String(n), value: n })),
  };
  const sortOf = (key, index) => key && {
    columnIndex: index,
    sortBy: { index: COLUMNS.findIndex(([, k]) => k === sort.by), direction: sort.direction },
    onSort: (_e, _i, direction) => setSort({ by: key, direction }),
  };

  let body;
  if (!loaded) {
    body = <Bullseye className="pf-v6-u-p-xl"><Spinner aria-label="Loading jobs" /></Bullseye>;
  } else if (!rows.length) {
    body = (
      <EmptyState titleText="No training jobs yet" headingLevel="h2" icon={CubesIcon}>
        <EmptyStateBody>
          {canCreate ? 'Create a job from a form, or from YAML; it appears here as soon as it is queued.'
            : 'No TrainJob in the namespaces you may see.'}
        </EmptyStateBody>
        {canCreate && (
          <EmptyStateFooter><EmptyStateActions>
            <Button variant="primary" component="a" href="#/create">Create job</Button>
          </EmptyStateActions></EmptyStateFooter>
        )}
      </EmptyState>
    );
  } else if (!sorted.length) {
    body = (
      <EmptyState titleText="No jobs match the filters" headingLevel="h2" icon={SearchIcon}>
        <EmptyStateBody>
          {plural(rows.length, 'job is', 'jobs are')} hidden by {plural(activeFilterCount(filters), 'filter', 'filters')}.
        </EmptyStateBody>
        <EmptyStateFooter><EmptyStateActions>
          <Button variant="link" onClick={() => setFilters(EMPTY_FILTERS)}>Clear all filters</Button>
        </EmptyStateActions></EmptyStateFooter>
      </EmptyState>
    );
  }

  return (
    <>
      <Header canCreate={canCreate} />
      <PageSection>
        {error && (
          <Alert component="h2" variant="danger" isInline title="The jobs could not be listed" className="pf-v6-u-mb-md">
            {error.message}{loaded && rows.length ? ' (the table shows what was last received)' : ''}
          </Alert>
        )}
        <JobsToolbar filters={filters} setFilters={setFilters} options={choices} pagination={pagination} />
        {/* The table scrolls sideways on its own when the screen is narrow; the actions stay in sight. */}
        <InnerScrollContainer>
        <Table aria-label="Training jobs" variant="compact" className="mpijob-jobs-table">
          <Thead>
            <Tr>
              {COLUMNS.map(([label, key, modifier], i) => <Th key={label} modifier={modifier} sort={sortOf(key, i) || undefined}>{label}</Th>)}
              <Th screenReaderText="Actions" isStickyColumn stickyMinWidth="3rem" stickyRightOffset="0" />
            </Tr>
          </Thead>
          {!body && (
            <Tbody>
              {shown.map((row) => <JobRow key={row.key} row={row} now={now} mayClone={canCreate} onAction={onAction} />)}
            </Tbody>
          )}
        </Table>
        </InnerScrollContainer>
        {body}
        {!body && <Pagination variant="bottom" widgetId="jobs-bottom" titles={{ paginationAriaLabel: 'Pages of jobs, bottom' }} {...pagination} />}
      </PageSection>
      <DeleteModal row={deleting} onConfirm={confirmDelete} onCancel={() => setDeleting(null)} />
      <AlertGroup isToast isLiveRegion>
        {alerts.map((a) => (
          <Alert key={a.key} variant={a.variant} title={a.title} timeout={a.variant === 'success' ? 5000 : 10000}
            onTimeout={() => setAlerts((all) => all.filter((x) => x.key !== a.key))}
            actionClose={<AlertActionCloseButton onClose={() => setAlerts((all) => all.filter((x) => x.key !== a.key))} />} />
        ))}
      </AlertGroup>
    </>
  );
}
