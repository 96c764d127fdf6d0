// Every pod's log lines merged in time order, kept outside React (a job can print 100k lines; React
// re-renders from a version number, at most every UPDATE_MS).

export const MAX_LINES = 200000; // older lines are dropped past this (the page says so; Download has the rest)
const UPDATE_MS = 100; // well within the 1 s a rank's line may take to show
const SPLICE_MAX = 64; // a batch of more lines than this is merged in one pass rather than placed line by line

/** `<RFC3339Nano> <rank|-> <text>` (the ranks header's shape); else `<RFC3339Nano> <text>`. */
export function parseLine(raw) {
  let m = /^(\S+) (-|\d+) ([\s\S]*)$/.exec(raw);
  if (m) return { ts: m[1], rank: m[2] === '-' ? null : m[2], text: m[3] };
  m = /^(\S+) ?([\s\S]*)$/.exec(raw);
  return { ts: m ? m[1] : '', rank: null, text: m ? m[2] : raw };
}

/** Milliseconds since the epoch with the nanoseconds Date.parse drops, for ordering. */
export function timeKey(ts) {
  const frac = /\.(\d+)/.exec(ts);
  const base = Date.parse(frac ? ts.replace(frac[0], '') : ts);
  if (Number.isNaN(base)) return 0;
  return base + (frac ? Number(`0.${frac[1]}`) * 1000 : 0);
}

export class MergedLog {
  constructor() {
    this.lines = []; // {seq, key, ts, src, pod, rank, text}, ordered by (key, seq); src: the pod's uid
    this.seq = 0;
    this.dropped = 0;
    this.version = 0;
    this.listeners = new Set();
    this.timer = null;
  }

  subscribe(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); }

  changed() {
    this.version += 1;
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.listeners.forEach((fn) => fn(this.version));
    }, UPDATE_MS);
  }

  entry(src, pod, raw) {
    const p = parseLine(raw);
    this.seq += 1;
    return { seq: this.seq, key: timeKey(p.ts), ts: p.ts, src, pod, rank: p.rank, text: p.text };
  }

  /** One line as it arrives: appended, or placed by its time when another pod's stream ran ahead. */
  add(src, pod, raw) {
    this.place(this.entry(src, pod, raw));
    this.trim();
    this.changed();
  }

  place(e) {
    const { lines } = this;
    if (!lines.length || lines[lines.length - 1].key <= e.key) lines.push(e);
    else {
      let lo = 0;
      let hi = lines.length;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (lines[mid].key <= e.key) lo = mid + 1; else hi = mid; }
      lines.splice(lo, 0, e);
    }
  }

  /**
   * A batch of one pod's lines, in its log's order (a whole log when its stream starts): placed by time.
   * Merged in one pass when the batch is large (every pod's log at once is not a splice per line); a few
   * lines are placed one by one, near the end where live lines go.
   */
  addAll(src, pod, raws) {
    const fresh = raws.filter((r) => r !== '').map((r) => this.entry(src, pod, r));
    if (!fresh.length) return;
    const { lines } = this;
    if (fresh.length <= SPLICE_MAX) {
      fresh.forEach((e) => this.place(e));
    } else {
      fresh.sort((a, b) => a.key - b.key || a.seq - b.seq);
      const merged = new Array(lines.length + fresh.length);
      let i = 0; let j = 0; let k = 0;
      while (i < lines.length || j < fresh.length) {
        merged[k++] = (j >= fresh.length || (i < lines.length && lines[i].key <= fresh[j].key)) ? lines[i++] : fresh[j++];
      }
      this.lines = merged;
    }
    this.trim();
    this.changed();
  }

  trim() {
    const extra = this.lines.length - MAX_LINES;
    if (extra > 0) { this.lines.splice(0, extra); this.dropped += extra; }
  }

  /** The merged text as a file holds it: time, pod, rank, text. */
  text(lines = this.lines) {
    return lines.map((l) => `${l.ts} ${l.pod} ${l.rank === null ? '-' : l.rank} ${l.text}`).join('\n') + (lines.length ? '\n' : '');
  }
}
