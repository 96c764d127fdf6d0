// A table whose columns sort on click (and with the keyboard: the headers are buttons), optionally
// paginated: the usage tables of #/cluster and the records of #/history.
import { useState } from 'react';
import { Pagination } from '@patternfly/react-core';
import {
  InnerScrollContainer, Table, Tbody, Td, Th, Thead, Tr,
} from '@patternfly/react-table';

/**
 * columns: [{key, title, value(row) (what sorts), render(row) (what shows; default: value), width, modifier}].
 * sort: the initial {key, direction: 'asc'|'desc'}. perPage: paginate by that many rows (0: all).
 */
export function SortableTable({ ariaLabel, columns, rows, rowKey, sort: initial, perPage = 0, testId, variant = 'compact' }) {
  const [sort, setSort] = useState(initial || { key: columns[0].key, direction: 'asc' });
  const [page, setPage] = useState(1);
  const [size, setSize] = useState(perPage);
  const index = Math.max(0, columns.findIndex((c) => c.key === sort.key));
  const column = columns[index];
  const sorted = [...rows].sort((a, b) => {
    const x = column.value(a);
    const y = column.value(b);
    const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x ?? '').localeCompare(String(y ?? ''));
    return sort.direction === 'asc' ? c : -c;
  });
  const last = size ? Math.max(1, Math.ceil(sorted.length / size)) : 1;
  const current = Math.min(page, last);
  const shown = size ? sorted.slice((current - 1) * size, current * size) : sorted;
  const pagination = (position) => (size ? (
    <Pagination itemCount={sorted.length} perPage={size} page={current} onSetPage={(_e, p) => setPage(p)}
      onPerPageSelect={(_e, s) => { setSize(s); setPage(1); }} isCompact={position === 'top'}
      variant={position} widgetId={`${testId || 'table'}-pagination-${position}`}
      titles={{ paginationAriaLabel: `${ariaLabel} pagination, ${position}` }} />
  ) : null);
  return (
    <>
      {pagination('top')}
      <InnerScrollContainer>{/* a wide table scrolls by itself, not the page */}
      <Table aria-label={ariaLabel} variant={variant} data-testid={testId}>
        <Thead>
          <Tr>
            {columns.map((c, i) => (
              <Th key={c.key} width={c.width} modifier={c.modifier || 'wrap'}
                sort={c.sortable === false ? undefined : {
                  columnIndex: i,
                  sortBy: { index, direction: sort.direction },
                  onSort: (_e, _i, direction) => { setSort({ key: c.key, direction }); setPage(1); },
                }}>
                {c.title}
              </Th>
            ))}
          </Tr>
        </Thead>
        <Tbody>
          {shown.map((row) => (
            <Tr key={rowKey(row)}>
              {columns.map((c) => (
                <Td key={c.key} dataLabel={typeof c.title === 'string' ? c.title : c.key} modifier={c.cellModifier}>
                  {c.render ? c.render(row) : c.value(row)}
                </Td>
              ))}
            </Tr>
          ))}
        </Tbody>
      </Table>
      </InnerScrollContainer>
      {pagination('bottom')}
    </>
  );
}
