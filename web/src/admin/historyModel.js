// What #/history computes from the server's job records (mpijob.io JobRecords, `mpijob history`):
// per local day and namespace, the jobs that ended and the GPU- and CPU-hours they used.

export const RANGES = [7, 30, 90]; // days the range selector offers
const DAY_MS = 86400000;

export const isEnded = (r) => Boolean(r.finished) && ['Complete', 'Failed', 'Deleted'].includes(r.state);

/** A local calendar day as YYYY-MM-DD (charts bucket by the browser's days, as people count them). */
export function dayKey(t) {
  const d = new Date(t);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** The last `count` local days, oldest first, ending today. */
export function lastDays(count, now = Date.now()) {
  const today = new Date(now);
  today.setHours(12, 0, 0, 0); // noon: a DST change never skips or repeats a day
  return Array.from({ length: count }, (_, i) => dayKey(today.getTime() - (count - 1 - i) * DAY_MS));
}

/** When the range starts: local midnight `days - 1` days ago (RFC 3339, for the API's `since`). */
export function rangeStart(days, now = Date.now()) {
  const d = new Date(now - (days - 1) * DAY_MS);
  d.setHours(0, 0, 0, 0);
  return d.toISOString();
}

/**
 * Per namespace, per day, the records that ended that day: {namespaces, days, jobs, gpuHours, cpuHours,
 * cpuKnown}, where jobs/gpuHours/cpuHours are Map(namespace → Map(day → value)).
 */
export function perDay(records, days) {
  const inRange = new Set(days);
  const namespaces = [...new Set(records.map((r) => r.metadata.namespace))].sort();
  const zero = () => new Map(namespaces.map((ns) => [ns, new Map(days.map((d) => [d, 0]))]));
  const jobs = zero();
  const gpuHours = zero();
  const cpuHours = zero();
  let cpuKnown = false;
  for (const r of records) {
    if (!isEnded(r)) continue;
    const day = dayKey(Date.parse(r.finished));
    if (!inRange.has(day)) continue;
    const ns = r.metadata.namespace;
    jobs.get(ns).set(day, jobs.get(ns).get(day) + 1);
    gpuHours.get(ns).set(day, gpuHours.get(ns).get(day) + (Number(r.gpuHours) || 0));
    if (r.cpuHours !== null && r.cpuHours !== undefined) {
      cpuKnown = true;
      cpuHours.get(ns).set(day, cpuHours.get(ns).get(day) + (Number(r.cpuHours) || 0));
    }
  }
  const used = namespaces.filter((ns) => [...jobs.get(ns).values()].some((v) => v > 0));
  return { namespaces: used, days, jobs, gpuHours, cpuHours, cpuKnown };
}

export const total = (series) => [...series.values()].reduce((sum, byDay) => sum + [...byDay.values()].reduce((a, b) => a + b, 0), 0);

/** Totals per namespace over the records that ended in the range. */
export function totalsByNamespace(records, since) {
  const start = Date.parse(since);
  const rows = new Map();
  for (const r of records) {
    if (!isEnded(r) || Date.parse(r.finished) < start) continue;
    const ns = r.metadata.namespace;
    if (!rows.has(ns)) rows.set(ns, { namespace: ns, jobs: 0, complete: 0, failed: 0, deleted: 0, gpuHours: 0, cpuHours: 0, runSeconds: 0 });
    const row = rows.get(ns);
    row.jobs += 1;
    if (r.state === 'Complete') row.complete += 1;
    if (r.state === 'Failed') row.failed += 1;
    if (r.state === 'Deleted') row.deleted += 1;
    row.gpuHours += Number(r.gpuHours) || 0;
    row.cpuHours += Number(r.cpuHours) || 0;
    row.runSeconds += Number(r.runSeconds) || 0;
  }
  return [...rows.values()];
}

/** "0.0012", "1.37", "42": hours with the precision that small numbers need. */
export function formatHours(h) {
  if (h === null || h === undefined) return '–';
  if (h === 0) return '0';
  if (h < 0.01) return h.toPrecision(2);
  return String(Math.round(h * 100) / 100);
}
