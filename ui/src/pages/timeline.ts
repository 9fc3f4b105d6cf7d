// Key timeline: every grant of one key (or key prefix) as a bar in the lane of
// its key, coloured by holder; clicking a bar shows the grant. Drawn as SVG by
// hand: a few hundred rectangles do not need a charting library.
import { getJson } from '../api.js';
import { field, fmtMs, fmtTime, formParams, h, svg } from '../dom.js';
import { errorBox, go } from '../nav.js';
import type { Grant, GrantPage } from '../types.js';

const MAX_GRANTS = 2000; // a timeline past this is unreadable; narrow the window instead
const WIDTH = 960;
const LANE = 26;
const LEFT = 160;
const PALETTE = ['#3b82c4', '#e07b39', '#4caf6a', '#9b59b6', '#c0392b', '#16a2a2', '#b58b00', '#6c757d', '#d6338a', '#2d4f8a'];

export async function timelinePage(params: URLSearchParams): Promise<Node> {
  const form = h(
    'form',
    { class: 'filters', onsubmit: (ev: Event) => { ev.preventDefault(); go('timeline', formParams(form)); } },
    field('key', 'Key', params.get('key'), 'payments/acct-42'),
    field('keyPrefix', 'or key prefix', params.get('keyPrefix'), 'payments/'),
    field('from', 'From (ISO 8601)', params.get('from')),
    field('to', 'To (ISO 8601)', params.get('to')),
    h('button', { type: 'submit' }, 'Show'),
  );
  if (!params.get('key') && !params.get('keyPrefix')) return h('div', {}, form, h('p', { class: 'muted' }, 'Name a key or a key prefix.'));

  const grants: Grant[] = [];
  let truncated = false;
  try {
    const query = new URLSearchParams([...params].filter(([k]) => ['key', 'keyPrefix', 'from', 'to'].includes(k)));
    query.set('limit', '500');
    for (;;) {
      const page = await getJson<GrantPage>('/v1/grants', query);
      grants.push(...page.items);
      if (!page.nextCursor) break;
      if (grants.length >= MAX_GRANTS) { truncated = true; break; }
      query.set('cursor', page.nextCursor);
    }
  } catch (err) {
    return h('div', {}, form, errorBox(err));
  }
  if (!grants.length) return h('div', {}, form, h('p', { class: 'muted' }, 'No grants in this window.'));
  return h('div', { class: 'timeline' }, form, truncated && h('p', { class: 'muted' }, `Showing the first ${MAX_GRANTS} grants; narrow the window.`), chart(grants));
}

function chart(grants: Grant[]): HTMLElement {
  const start = (g: Grant) => Date.parse(g.grantedAt);
  // The axis spans the known starts and ends; stretching it to "now" for a
  // grant still held would squash every closed grant into a sliver. An open
  // grant (or one whose end is unknown) runs to the right edge, faded.
  const t0 = Math.min(...grants.map(start));
  const known = Math.max(...grants.map((g) => (g.endedAt ? Date.parse(g.endedAt) : start(g))), t0 + 1);
  const t1 = known + (grants.some((g) => !g.endedAt) ? (known - t0) * 0.1 : 0);
  const end = (g: Grant) => (g.endedAt ? Date.parse(g.endedAt) : t1);
  const keys = [...new Set(grants.map((g) => g.key))].sort();
  const holders = [...new Set(grants.map((g) => g.holder))].sort();
  const colour = (holder: string) => PALETTE[holders.indexOf(holder) % PALETTE.length] as string;
  const x = (t: number) => LEFT + ((t - t0) / (t1 - t0)) * (WIDTH - LEFT - 10);
  const height = keys.length * LANE + 30;

  const detail = h('div', { class: 'detail' }, h('p', { class: 'muted' }, 'Click a bar to see its grant.'));
  const select = (g: Grant, bar: SVGRectElement) => {
    for (const b of root.querySelectorAll('rect.selected')) b.classList.remove('selected');
    bar.classList.add('selected');
    detail.replaceChildren(
      h('h2', {}, `Grant ${g.grantRevision === '0' ? '(unprotected)' : `r${g.grantRevision}`} on ${g.key}`),
      h('dl', {}, [
        ['Holder', g.holder], ['Token', g.token], ['Class', g.class], ['Cluster', g.cluster], ['Granted at', fmtTime(g.grantedAt)],
        ['Waited', fmtMs(g.waitMs)], ['Ended at', fmtTime(g.endedAt)], ['Ended by', g.endKind ?? 'still held'], ['Held for', fmtMs(g.durationMs)],
        ['Unprotected', g.unprotected ? 'yes — granted without quorum' : 'no'],
      ].map(([k, v]) => [h('dt', {}, k), h('dd', { 'data-field': k }, v)])),
    );
  };

  const ticks = Array.from({ length: 5 }, (_, i) => t0 + ((t1 - t0) * i) / 4);
  const plot = svg(
    'svg',
    { width: WIDTH, height, viewBox: `0 0 ${WIDTH} ${height}`, role: 'img', 'aria-label': 'grant timeline' },
    keys.map((k, i) => svg('text', { x: 4, y: i * LANE + 17, 'font-size': 12 }, k)),
    ticks.map((t, i) => [
      svg('line', { x1: x(t), x2: x(t), y1: 0, y2: height - 24, stroke: '#e3e7eb' }),
      svg('text', { x: x(t), y: height - 8, 'font-size': 11, 'text-anchor': i === 0 ? 'start' : i === ticks.length - 1 ? 'end' : 'middle' }, new Date(t).toISOString().slice(11, 23)),
    ]),
  );
  for (const g of grants) {
    const bar = svg(
      'rect',
      {
        class: 'bar', x: x(start(g)), y: keys.indexOf(g.key) * LANE + 4, width: Math.max(2, x(end(g)) - x(start(g))), height: LANE - 8,
        fill: colour(g.holder), 'fill-opacity': g.endedAt ? 1 : 0.55, stroke: g.unprotected ? '#a61b1b' : 'none',
        'data-revision': g.grantRevision, 'data-holder': g.holder, 'data-key': g.key,
      },
      svg('title', {}, `${g.holder} · ${fmtTime(g.grantedAt)} · ${g.endKind ?? 'held'}`),
    );
    bar.addEventListener('click', () => select(g, bar));
    plot.appendChild(bar);
  }
  const root = h(
    'div',
    {},
    h('div', { class: 'legend' }, holders.map((x) => h('span', { style: `--c: ${colour(x)}` }, x))),
    plot,
    h('p', { class: 'muted' }, `${grants.length} grants, ${fmtTime(new Date(t0).toISOString())} – ${fmtTime(new Date(t1).toISOString())} (UTC). Faded: still held; red outline: unprotected.`),
    detail,
  );
  return root;
}
