// Scope: the task-creation figure as a dependency-free SVG: throughput (tasks/s, Countersign and
// raw Update-with-Start) and latency (p50 / p99, ms) against concurrency, log-2 x axis.
import type { TaskCreationLevel } from '../scenarios/task-creation.js';

interface Series {
  label: string;
  color: string;
  dash?: string;
  ys: number[];
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
const nice = (max: number): number => {
  if (!(max > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
};

function panel(x0: number, title: string, yLabel: string, xs: number[], series: Series[]): string {
  const w = 400;
  const h = 260;
  const left = x0 + 60;
  const right = x0 + w - 10;
  const top = 40;
  const bottom = top + h - 70;
  const yMax = nice(Math.max(...series.flatMap((s) => s.ys.filter(Number.isFinite))));
  const lx = xs.map((x) => Math.log2(x));
  const xMin = Math.min(...lx);
  const xMax = Math.max(...lx);
  const px = (x: number) => left + ((Math.log2(x) - xMin) / (xMax - xMin || 1)) * (right - left);
  const py = (y: number) => bottom - (y / yMax) * (bottom - top);
  const out: string[] = [];
  out.push(`<text x="${x0 + w / 2}" y="20" text-anchor="middle" font-weight="bold">${esc(title)}</text>`);
  out.push(
    `<line x1="${left}" y1="${bottom}" x2="${right}" y2="${bottom}" stroke="#000"/><line x1="${left}" y1="${top}" x2="${left}" y2="${bottom}" stroke="#000"/>`,
  );
  for (let k = 0; k <= 4; k++) {
    const v = (yMax * k) / 4;
    out.push(
      `<line x1="${left}" y1="${py(v)}" x2="${right}" y2="${py(v)}" stroke="#ddd"/><text x="${left - 5}" y="${py(v) + 4}" text-anchor="end">${+v.toFixed(1)}</text>`,
    );
  }
  for (const x of xs) out.push(`<text x="${px(x)}" y="${bottom + 15}" text-anchor="middle">${x}</text>`);
  out.push(`<text x="${(left + right) / 2}" y="${bottom + 32}" text-anchor="middle">concurrency (requests in flight)</text>`);
  out.push(`<text transform="translate(${x0 + 14},${(top + bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`);
  series.forEach((s, i) => {
    const pts = xs.map((x, j) => `${px(x).toFixed(1)},${py(s.ys[j]!).toFixed(1)}`).join(' ');
    out.push(
      `<polyline points="${pts}" fill="none" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`,
    );
    for (const x of xs) {
      const j = xs.indexOf(x);
      out.push(`<circle cx="${px(x).toFixed(1)}" cy="${py(s.ys[j]!).toFixed(1)}" r="3" fill="${s.color}"/>`);
    }
    const ly = bottom + 48 + Math.floor(i / 2) * 14;
    const lxp = left + (i % 2) * 170;
    out.push(
      `<line x1="${lxp}" y1="${ly - 4}" x2="${lxp + 20}" y2="${ly - 4}" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/><text x="${lxp + 25}" y="${ly}">${esc(s.label)}</text>`,
    );
  });
  return out.join('\n');
}

/** The SVG document for the task-creation levels. */
export function taskCreationSvg(levels: TaskCreationLevel[], caption: string): string {
  const xs = levels.map((l) => l.concurrency);
  const body = [
    panel(0, 'Task creation throughput', 'tasks / s (median of runs)', xs, [
      { label: 'Countersign', color: '#c0392b', ys: levels.map((l) => l.countersignPerSec) },
      { label: 'raw Update-with-Start', color: '#2c3e50', dash: '6 4', ys: levels.map((l) => l.baselinePerSec) },
      { label: 'same Temporal shape', color: '#27ae60', dash: '2 3', ys: levels.map((l) => l.shapedPerSec) },
    ]),
    panel(420, 'Task creation latency', 'ms', xs, [
      { label: 'Countersign p50', color: '#c0392b', ys: levels.map((l) => l.countersignLatencyMs.p50Ms) },
      { label: 'Countersign p99', color: '#e67e22', ys: levels.map((l) => l.countersignLatencyMs.p99Ms) },
      { label: 'raw UwS p50', color: '#2c3e50', dash: '6 4', ys: levels.map((l) => l.baselineLatencyMs.p50Ms) },
      { label: 'raw UwS p99', color: '#7f8c8d', dash: '6 4', ys: levels.map((l) => l.baselineLatencyMs.p99Ms) },
    ]),
  ].join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="830" height="330" viewBox="0 0 830 330" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="#fff"/>
${body}
<text x="415" y="322" text-anchor="middle" fill="#555">${esc(caption)}</text>
</svg>
`;
}
