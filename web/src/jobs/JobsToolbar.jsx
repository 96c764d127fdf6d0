// The filters above the table: search, a menu per category, the creation date range, the active
// filters as removable labels, the page size and pages.
import {
  Pagination, SearchInput, TextInput, Toolbar, ToolbarContent, ToolbarFilter, ToolbarGroup, ToolbarItem,
} from '@patternfly/react-core';
import CheckSelect, { NONE } from './CheckSelect.jsx';
import { CATEGORIES, EMPTY_FILTERS } from './rows.js';

export default function JobsToolbar({ filters, setFilters, options, pagination }) {
  const set = (patch) => setFilters({ ...filters, ...patch });
  const dateLabel = (key, text) => (filters[key] ? [{ key, node: `${text} ${filters[key]}` }] : []);
  return (
    <Toolbar clearAllFilters={() => setFilters(EMPTY_FILTERS)} clearFiltersButtonText="Clear all filters">
      <ToolbarContent>
        <ToolbarFilter categoryName="Search" labels={filters.text ? [filters.text] : []}
          deleteLabel={() => set({ text: '' })}>
          <SearchInput aria-label="Search jobs" placeholder="Name, namespace, queue or creator"
            value={filters.text} onChange={(_e, text) => set({ text })} onClear={() => set({ text: '' })} />
        </ToolbarFilter>
        <ToolbarGroup variant="filter-group">
          {CATEGORIES.map(([key, label]) => (
            <ToolbarFilter key={key} categoryName={label} labels={filters[key].map((v) => ({ key: v || NONE, node: v || NONE }))}
              deleteLabel={(_c, chip) => set({ [key]: filters[key].filter((v) => (v || NONE) !== (chip.key ?? chip)) })}
              deleteLabelGroup={() => set({ [key]: [] })}>
              <CheckSelect label={label} values={options[key]} selected={filters[key]} onChange={(v) => set({ [key]: v })} />
            </ToolbarFilter>
          ))}
        </ToolbarGroup>
        <ToolbarGroup variant="filter-group" alignItems="center">
          <ToolbarItem variant="label" aria-hidden="true">Created</ToolbarItem>
          <ToolbarFilter categoryName="Created" labels={[...dateLabel('after', 'after'), ...dateLabel('before', 'before')]}
            deleteLabel={(_c, chip) => set({ [chip.key]: '' })} deleteLabelGroup={() => set({ after: '', before: '' })}>
            <TextInput type="date" aria-label="Created after" className="mpijob-date" value={filters.after}
              max={filters.before || undefined} onChange={(_e, after) => set({ after })} />
          </ToolbarFilter>
          <ToolbarItem variant="label" aria-hidden="true">to</ToolbarItem>
          <ToolbarItem>
            <TextInput type="date" aria-label="Created before" className="mpijob-date" value={filters.before}
              min={filters.after || undefined} onChange={(_e, before) => set({ before })} />
          </ToolbarItem>
        </ToolbarGroup>
        <ToolbarItem variant="pagination" align={{ default: 'alignEnd' }}>
          <Pagination isCompact widgetId="jobs-top" titles={{ paginationAriaLabel: 'Pages of jobs, top' }} {...pagination} />
        </ToolbarItem>
      </ToolbarContent>
    </Toolbar>
  );
}
