// All pods' logs merged in time order, each line tagged with its pod and MPI rank: filters by pod and
// rank, a search that marks every match, live follow, and a download of the whole merged text. Only the
// last lines are rendered (RENDER_STEP at a time); search, filters and download cover every line.
import { memo, useDeferredValue, useLayoutEffect, useMemo, useRef, useState } from 'react';
import {
  Alert, Button, Checkbox, FormSelect, FormSelectOption, SearchInput, Switch, Toolbar, ToolbarContent, ToolbarGroup, ToolbarItem,
} from '@patternfly/react-core';
import DownloadIcon from '@patternfly/react-icons/dist/esm/icons/download-icon';
import { useCanI } from '../hooks.js';
import { MAX_LINES } from './logStore.js';
import { useMergedLogs } from './useMergedLogs.js';
import { sortPods } from './model.js';

const RENDER_STEP = 1000;
const NAMED_MAX = 4; // live pods named in the status line; past this, counted
const NONE = [];
const ALL = '*';
const NO_RANK = '-';
const fmt = (n) => n.toLocaleString('en-US');
const pad = (n, w = 2) => String(n).padStart(w, '0');

function clock(key) {
  if (!key) return '';
  const d = new Date(key);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

const lower = (line) => { if (line.lower === undefined) line.lower = line.text.toLowerCase(); return line.lower; };

function countIn(line, q) {
  let n = 0;
  for (let i = lower(line).indexOf(q); i >= 0; i = line.lower.indexOf(q, i + q.length)) n += 1;
  return n;
}

/** The text with every (case-insensitive) match of `q` in a <mark>. */
function marked(line, q) {
  if (!q) return line.text;
  const parts = [];
  let from = 0;
  for (let i = lower(line).indexOf(q); i >= 0; i = line.lower.indexOf(q, from)) {
    if (i > from) parts.push(line.text.slice(from, i));
    parts.push(<mark key={i}>{line.text.slice(i, i + q.length)}</mark>);
    from = i + q.length;
  }
  parts.push(line.text.slice(from));
  return parts;
}

const LogLine = memo(function LogLine({ line, q, podLabel }) {
  return (
    <div className="mpijob-logline">
      <span className="mpijob-logline__ts" title={line.ts}>{clock(line.key)}</span>
      <span className="mpijob-logline__pod" title={line.pod}>{podLabel}</span>
      <span className="mpijob-logline__rank">{line.rank === null ? '-' : `r${line.rank}`}</span>
      <span className="mpijob-logline__text">{marked(line, q)}</span>
    </div>
  );
});

function download(name, text) {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain;charset=utf-8' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = `${name}-logs.txt`;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

export default function Logs({ job, pods }) {
  const { name } = job.metadata;
  const may = useCanI({ verb: 'get', resource: 'pods', subresource: 'log', namespace: job.metadata.namespace });
  const { log, version, states } = useMergedLogs(job.metadata.namespace, may ? pods : NONE);
  const [pod, setPod] = useState(ALL);
  const [rank, setRank] = useState(ALL);
  const [query, setQuery] = useState('');
  const [onlyMatching, setOnlyMatching] = useState(false);
  const [follow, setFollow] = useState(true);
  const [limit, setLimit] = useState(RENDER_STEP);
  const [current, setCurrent] = useState(-1);
  const box = useRef(null);
  const q = useDeferredValue(query).toLowerCase(); // typing stays responsive while 100k lines are searched

  const all = log.lines;
  const podNames = useMemo(() => {
    const names = new Set(sortPods(pods).map((p) => p.metadata.name));
    all.forEach((l) => names.add(l.pod));
    return [...names];
    // eslint-disable-next-line react-hooks/exhaustive-deps -- log.lines grows in place: version counts its changes
  }, [pods, version]);
  const ranks = useMemo(() => {
    const seen = new Set();
    all.forEach((l) => l.rank !== null && seen.add(l.rank));
    return [...seen].sort((a, b) => a - b);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- log.lines grows in place: version counts its changes
  }, [version]);

  const filtered = useMemo(() => all.filter((l) => (pod === ALL || l.pod === pod)
    // eslint-disable-next-line react-hooks/exhaustive-deps -- log.lines grows in place: version counts its changes
    && (rank === ALL || (rank === NO_RANK ? l.rank === null : l.rank === rank))), [version, pod, rank]);
  const { matches, matchingLines } = useMemo(() => {
    if (!q) return { matches: 0, matchingLines: null };
    let n = 0;
    const lines = [];
    for (const l of filtered) { const c = countIn(l, q); if (c) { n += c; lines.push(l); } }
    return { matches: n, matchingLines: lines };
  }, [filtered, q]);
  const pool = onlyMatching && matchingLines ? matchingLines : filtered;
  const shown = pool.length > limit ? pool.slice(pool.length - limit) : pool;
  const prefix = `${name}-`;
  const label = (p) => (p.startsWith(prefix) ? p.slice(prefix.length) : p);

  useLayoutEffect(() => {
    if (follow && box.current) box.current.scrollTop = box.current.scrollHeight;
  });
  const onScroll = () => {
    const el = box.current;
    if (follow && el && el.scrollTop + el.clientHeight < el.scrollHeight - 40) setFollow(false); // the reader scrolled up
  };
  const goto = (step) => {
    const marks = box.current ? [...box.current.querySelectorAll('mark')] : [];
    if (!marks.length) return;
    const next = (current + step + marks.length) % marks.length;
    marks.forEach((m, i) => m.classList.toggle('mpijob-logline__current', i === next));
    setFollow(false);
    marks[next].scrollIntoView({ block: 'center' });
    setCurrent(next);
  };
  const readers = Object.values(states);
  const live = readers.filter((r) => r.state === 'live').map((r) => label(r.name));

  if (may === false) return <Alert component="h2" variant="info" isInline title="You may not read the logs of this namespace's pods" />;
  return (
    <>
      <Toolbar id="log-toolbar" className="pf-v6-u-px-0">
        <ToolbarContent>
          <ToolbarGroup>
            <ToolbarItem>
              <FormSelect id="log-pod" aria-label="Filter by pod" value={pod} onChange={(_e, v) => setPod(v)} data-testid="log-pod-filter">
                <FormSelectOption value={ALL} label="All pods" />
                {podNames.map((p) => <FormSelectOption key={p} value={p} label={p} />)}
              </FormSelect>
            </ToolbarItem>
            <ToolbarItem>
              <FormSelect id="log-rank" aria-label="Filter by MPI rank" value={rank} onChange={(_e, v) => setRank(v)} data-testid="log-rank-filter">
                <FormSelectOption value={ALL} label="All ranks" />
                <FormSelectOption value={NO_RANK} label="No rank (mpirun, sshd)" />
                {ranks.map((r) => <FormSelectOption key={r} value={r} label={`Rank ${r}`} />)}
              </FormSelect>
            </ToolbarItem>
          </ToolbarGroup>
          <ToolbarItem>
            <SearchInput aria-label="Search logs" placeholder="Search logs" value={query} data-testid="log-search"
              onChange={(_e, v) => { setQuery(v); setCurrent(-1); }} onClear={() => { setQuery(''); setCurrent(-1); }}
              resultsCount={q ? `${fmt(matches)}` : undefined}
              onNextClick={q ? () => goto(1) : undefined} onPreviousClick={q ? () => goto(-1) : undefined}
              nextNavigationButtonAriaLabel="Next match" previousNavigationButtonAriaLabel="Previous match" />
          </ToolbarItem>
          <ToolbarItem alignSelf="center">
            <Checkbox id="log-only-matching" label="Only matching lines" isChecked={onlyMatching}
              onChange={(_e, v) => setOnlyMatching(v)} isDisabled={!q} />
          </ToolbarItem>
          <ToolbarItem alignSelf="center">
            <Switch id="log-follow" label="Follow" isChecked={follow} onChange={(_e, v) => setFollow(v)} data-testid="log-follow" />
          </ToolbarItem>
          <ToolbarItem>
            <Button variant="secondary" icon={<DownloadIcon />} onClick={() => download(name, log.text())}
              isDisabled={!all.length} data-testid="log-download">Download</Button>
          </ToolbarItem>
        </ToolbarContent>
      </Toolbar>
      <div className="mpijob-log__status" data-testid="log-status" aria-live="off">
        <span data-testid="log-count">
          {pool.length > shown.length
            ? `Showing the last ${fmt(shown.length)} of ${fmt(pool.length)} lines`
            : `${fmt(shown.length)} line${shown.length === 1 ? '' : 's'}`}
          {pool.length !== all.length && ` (${fmt(all.length)} in all)`}
        </span>
        {q && <span data-testid="log-match-count">{`${fmt(matches)} match${matches === 1 ? '' : 'es'} in ${fmt(matchingLines.length)} line${matchingLines.length === 1 ? '' : 's'}`}</span>}
        {pool.length > shown.length && (
          <Button variant="link" isInline onClick={() => setLimit(limit + RENDER_STEP)}>{`Show ${fmt(RENDER_STEP)} more`}</Button>
        )}
        {log.dropped > 0 && <span>{`The first ${fmt(log.dropped)} lines were dropped (at most ${fmt(MAX_LINES)} are kept).`}</span>}
        <span data-testid="log-live">{live.length ? `Following ${live.length > NAMED_MAX ? `${fmt(live.length)} pods` : live.join(', ')} live.`
          : 'No pod is running: the logs are complete.'}</span>
        {Object.entries(states).filter(([, r]) => r.state === 'error').map(([uid, r]) => (
          <span key={uid} className="mpijob-log__error">{`${label(r.name)}: its log is not readable`}</span>
        ))}
      </div>
      <div ref={box} className="mpijob-log" role="log" aria-label={`Logs of ${name}, all pods merged in time order`}
        tabIndex={0} onScroll={onScroll} data-testid="log-lines">
        {shown.length === 0 && <div className="mpijob-log__empty">{all.length ? 'No line matches the filters.' : 'No log lines yet.'}</div>}
        {shown.map((l) => <LogLine key={l.seq} line={l} q={q} podLabel={label(l.pod)} />)}
      </div>
    </>
  );
}
