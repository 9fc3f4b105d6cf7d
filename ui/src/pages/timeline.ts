// Key timeline: one lane per key (one key, or the busiest keys under a
// prefix). Few grants come as bars coloured by holder — a click shows the
// grant — with expiries (◆), force-releases (▲) and deletes by hand (■)
// marked where the hold ended, and foreign grants (● at the start: put
// straight into etcd, not by the lock API). Many grants come aggregated per time bucket by the API: a cell's
// shade is how much of the bucket the key was held, its colour the holder that
// held it longest; a click zooms into that bucket. History gaps are shaded red.
import type { CustomSeriesRenderItemAPI, CustomSeriesRenderItemParams, CustomSeriesRenderItemReturn, ScatterSeriesOption } from 'echarts';
import { graphic } from 'echarts/core';
import { getJson } from '../api.js';
import { PALETTE, chartBox, esc, shortMs, type Chart, type EChartsOption } from '../charts.js';
import { field, fmtMs, fmtTime, formParams, h } from '../dom.js';
import { errorBox, go, narrowedNote } from '../nav.js';
import type { EndKind, Grant, Timeline, TimelineCell, TimelineGap } from '../types.js';

const LANE_PX = 34;
const EXPIRY = '#e07b39';
const FORCE = '#a61b1b';
const FOREIGN = '#6f42c1';
const DELETED = '#3d3d3d';

/** A scatter series of marks, only when there are any (an empty series would crowd the legend of every chart). */
function markSeries(name: string, symbol: string, color: string, data: unknown[], tooltip: (count: number) => string, z = 6): ScatterSeriesOption[] {
  return data.length
    ? [
        {
          type: 'scatter',
          name,
          symbol,
          symbolSize: 10,
          itemStyle: { color, borderColor: '#fff' },
          data: data as never,
          z,
          tooltip: { formatter: (p) => tooltip((p.data as { count?: number }).count ?? 1) },
        },
      ]
    : [];
}

export async function timelinePage(params: URLSearchParams): Promise<Node> {
  const form = h(
    'form',
    {
      class: 'filters',
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        go('timeline', formParams(form));
      },
    },
    field('key', 'Key', params.get('key'), 'payments/acct-42'),
    field('keyPrefix', 'or key prefix', params.get('keyPrefix'), 'payments/'),
    field('cluster', 'Cluster', params.get('cluster')),
    field('from', 'From (ISO 8601)', params.get('from')),
    field('to', 'To (ISO 8601)', params.get('to')),
    h('button', { type: 'submit' }, 'Show'),
  );
  // Neither a key nor a prefix: the busiest keys of the last hour (the API's default for every key), not an empty page.
  const everyKey = !params.get('key') && !params.get('keyPrefix');
  let timeline: Timeline;
  try {
    const query = new URLSearchParams([...params].filter(([k]) => ['key', 'keyPrefix', 'cluster', 'from', 'to'].includes(k)));
    timeline = await getJson<Timeline>('/v1/reports/timeline', query);
  } catch (err) {
    return h('div', {}, form, errorBox(err));
  }
  if (!timeline.lanes.length) return h('div', { class: 'timeline' }, form, h('p', { class: 'muted' }, 'No grants in this window.'), gapList(timeline.gaps));
  const userWindow = params.has('from') || params.has('to');
  const view = timeline.mode === 'grants' ? grantChart(timeline, userWindow) : cellChart(timeline, params);
  return h(
    'div',
    { class: 'timeline', 'data-mode': timeline.mode },
    form,
    narrowedNote(timeline.narrowedTo),
    everyKey &&
      h(
        'p',
        { class: 'muted every-key' },
        `The busiest keys from ${fmtTime(timeline.from)} to ${fmtTime(timeline.to)}: name a key or a prefix to look closer.`,
      ),
    timeline.totalLanes > timeline.lanes.length &&
      h('p', { class: 'muted' }, `Showing the ${timeline.lanes.length} busiest of ${timeline.totalLanes} keys${everyKey ? '' : ' under this prefix'}.`),
    view,
    gapList(timeline.gaps),
  );
}

/**
 * The x range: the window, or in grant mode without a chosen window the
 * grants' own span, so a short history is not a sliver. Stretching that span
 * to "now" for a grant still held would squash every closed grant: an open
 * grant runs to the right edge instead, past the last known start or end.
 */
function xRange(t: Timeline, grants: Grant[], userWindow: boolean): [number, number] {
  const from = Date.parse(t.from);
  const to = Date.parse(t.to);
  if (userWindow || !grants.length) return [from, to];
  // Gap edges inside the window count as known instants too, so a gap next to the grants is on screen.
  const gapEdges = t.gaps
    .flatMap((g) => [g.fromTime, g.toTime])
    .filter((x): x is string => x !== null)
    .map(Date.parse)
    .filter((x) => x >= from && x <= to);
  const starts = grants.map((g) => Date.parse(g.grantedAt));
  const known = [...grants.map((g) => (g.endedAt ? Date.parse(g.endedAt) : Date.parse(g.grantedAt))), ...gapEdges];
  const lo = Math.max(from, Math.min(...starts, ...gapEdges));
  const last = Math.min(to, Math.max(...known, lo + 1));
  const pad = Math.max(500, (last - lo) * 0.05);
  return [lo - pad, grants.some((g) => !g.endedAt) ? last + (last - lo) * 0.1 + pad : last + pad];
}

function gapAreas(gaps: TimelineGap[], [lo, hi]: [number, number]): { xAxis: number; name?: string }[][] {
  return gaps.map((g) => [
    { xAxis: g.fromTime ? Date.parse(g.fromTime) : lo, name: `gap r${g.fromRevision}–r${g.toRevision}` },
    { xAxis: g.toTime ? Date.parse(g.toTime) : hi },
  ]);
}

function baseOption(lanes: string[], range: [number, number]): EChartsOption {
  return {
    animation: false,
    grid: { left: 10, right: 24, top: 10, bottom: 70, containLabel: true },
    xAxis: { type: 'time', min: range[0], max: range[1], axisLabel: { hideOverlap: true } },
    yAxis: { type: 'category', data: lanes, inverse: true, axisTick: { show: false }, splitLine: { show: true, lineStyle: { color: '#eef1f4' } } },
    dataZoom: [
      { type: 'inside', filterMode: 'weakFilter' },
      { type: 'slider', filterMode: 'weakFilter', height: 20, bottom: 10 },
    ],
    tooltip: { trigger: 'item', confine: true },
  };
}

/** A rectangle on lane `lane` from x0 to x1, clipped to the plot. */
function laneRect(params: CustomSeriesRenderItemParams, api: CustomSeriesRenderItemAPI, x0: number, x1: number, lane: number, fill: number) {
  const start = api.coord([x0, lane]) as [number, number];
  const end = api.coord([x1, lane]) as [number, number];
  const size = api.size?.([0, 1]);
  const band = (Array.isArray(size) ? (size[1] as number) : LANE_PX) * fill;
  const sys = params.coordSys as unknown as { x: number; y: number; width: number; height: number };
  return graphic.clipRectByRect(
    { x: start[0], y: start[1] - band / 2, width: Math.max(2, end[0] - start[0]), height: band },
    { x: sys.x, y: sys.y, width: sys.width, height: sys.height },
  );
}

function grantChart(t: Timeline, userWindow: boolean): HTMLElement {
  const grants = t.grants;
  const holders = [...new Set(grants.map((g) => g.holder))].sort();
  const holderIndex = new Map(holders.map((x, i) => [x, i]));
  const colour = (holder: string) => PALETTE[(holderIndex.get(holder) ?? 0) % PALETTE.length] as string;
  const range = xRange(t, grants, userWindow);
  const lanes = new Map(t.lanes.map((k, i) => [k, i]));
  const lane = (g: Grant) => lanes.get(g.key) ?? 0;
  // An open hold runs to the right edge, faded.
  const end = (g: Grant) => (g.endedAt ? Date.parse(g.endedAt) : range[1]);
  const ends = (kind: EndKind) => grants.flatMap((g, i) => (g.endKind === kind && g.endedAt ? [{ value: [Date.parse(g.endedAt), lane(g)], grant: i }] : []));
  const foreignStarts = grants.flatMap((g, i) => (g.origin === 'foreign' ? [{ value: [Date.parse(g.grantedAt), lane(g)], grant: i }] : []));

  const detail = h('div', { class: 'detail' }, h('p', { class: 'muted' }, 'Click a bar to see its grant.'));
  const option: EChartsOption = {
    ...baseOption(t.lanes, range),
    series: [
      {
        type: 'custom',
        name: 'grants',
        selectedMode: 'single',
        encode: { x: [0, 1], y: 2 },
        data: grants.map((g, i) => ({ value: [Date.parse(g.grantedAt), end(g), lane(g), i] })),
        renderItem: (params: CustomSeriesRenderItemParams, api: CustomSeriesRenderItemAPI): CustomSeriesRenderItemReturn => {
          const i = api.value(3) as number;
          const g = grants[i] as Grant;
          const shape = laneRect(params, api, api.value(0) as number, api.value(1) as number, api.value(2) as number, 0.6);
          if (!shape) return null;
          return {
            type: 'rect',
            shape,
            style: { fill: colour(g.holder), opacity: g.endedAt ? 1 : 0.5, stroke: g.unprotected ? FORCE : undefined, lineWidth: g.unprotected ? 2 : 0 },
            select: { style: { stroke: '#000', lineWidth: 2 } },
          };
        },
        tooltip: {
          formatter: (p) => {
            const g = grants[(p as { dataIndex: number }).dataIndex] as Grant;
            return `<b>${esc(g.holder)}</b><br>${esc(g.key)}<br>${fmtTime(g.grantedAt)} → ${fmtTime(g.endedAt)}<br>${esc(g.endKind ?? 'still held')}${g.durationMs === null ? '' : `, ${shortMs(g.durationMs)}`}${g.origin === 'foreign' ? '<br><b>foreign grant</b> (not by the lock API)' : ''}`;
          },
        },
        markArea: {
          silent: true,
          itemStyle: { color: 'rgba(166, 27, 27, 0.15)' },
          label: { color: FORCE, position: 'insideTop' },
          data: gapAreas(t.gaps, range) as never,
        },
      },
      {
        type: 'scatter',
        name: 'expiry',
        symbol: 'diamond',
        symbolSize: 11,
        itemStyle: { color: EXPIRY, borderColor: '#fff' },
        data: ends('expiry'),
        z: 5,
        tooltip: { formatter: 'lease expired' },
      },
      {
        type: 'scatter',
        name: 'force-release',
        symbol: 'triangle',
        symbolSize: 12,
        itemStyle: { color: FORCE, borderColor: '#fff' },
        data: ends('force'),
        z: 5,
        tooltip: { formatter: 'force-released' },
      },
      ...markSeries('deleted', 'rect', DELETED, ends('deleted'), () => 'deleted by hand: no marker, the lease outlived it'),
      ...markSeries('foreign', 'circle', FOREIGN, foreignStarts, () => 'foreign grant: put straight into etcd, not by the lock API'),
    ],
  };

  const show = (chart: Chart, i: number) => {
    const g = grants[i];
    if (!g) return;
    chart.dispatchAction({ type: 'select', seriesName: 'grants', dataIndex: i });
    detail.replaceChildren(
      h('h2', {}, `Grant ${g.grantRevision === '0' ? '(unprotected)' : `r${g.grantRevision}`} on ${g.key}`),
      h(
        'dl',
        {},
        [
          ['Holder', g.holder],
          ['Token', g.token],
          ['Class', g.class],
          ['Cluster', g.cluster],
          ['Granted at', fmtTime(g.grantedAt)],
          ['Waited', fmtMs(g.waitMs)],
          ['Ended at', fmtTime(g.endedAt)],
          ['Ended by', g.endKind ?? 'still held'],
          ['Held for', fmtMs(g.durationMs)],
          ['Unprotected', g.unprotected ? 'yes — granted without quorum' : 'no'],
          ['Origin', g.origin === 'foreign' ? 'foreign — put straight into etcd, not by the lock API' : 'lock API'],
        ].map(([k, v]) => [h('dt', {}, k), h('dd', { 'data-field': k }, v)]),
      ),
    );
  };
  const box = chartBox('timeline', option, t.lanes.length * LANE_PX + 110, (chart) => {
    chart.on('click', (p) => {
      const data = p.data as { grant?: number } | undefined;
      if (p.seriesName === 'grants') show(chart, p.dataIndex);
      else if (data?.grant !== undefined) show(chart, data.grant);
    });
  });
  return h(
    'div',
    {},
    h(
      'div',
      { class: 'legend' },
      holders.slice(0, 30).map((x) => h('span', { style: `--c: ${colour(x)}` }, x)),
      holders.length > 30 && h('span', { class: 'muted' }, `… ${holders.length - 30} more`),
    ),
    box,
    h(
      'p',
      { class: 'muted' },
      `${grants.length} grant${grants.length === 1 ? '' : 's'}, ${fmtTime(t.from)} – ${fmtTime(t.to)} (UTC). Faded: still held; red outline: unprotected; ◆ lease expiry; ▲ force-release; ■ deleted by hand; ● foreign grant (not by the lock API); red band: history gap. Scroll or drag the slider to zoom.`,
    ),
    detail,
  );
}

function cellChart(t: Timeline, params: URLSearchParams): HTMLElement {
  const step = (t.bucketSeconds ?? 60) * 1000;
  const range: [number, number] = [Date.parse(t.from), Date.parse(t.to)];
  const holders = [...new Set(t.cells.map((c) => c.topHolder))].sort();
  const holderIndex = new Map(holders.map((x, i) => [x, i]));
  const colour = (holder: string) => PALETTE[(holderIndex.get(holder) ?? 0) % PALETTE.length] as string;
  const lanes = new Map(t.lanes.map((k, i) => [k, i]));
  const lane = (c: TimelineCell) => lanes.get(c.key) ?? 0;
  const marks = (pick: (c: TimelineCell) => number) =>
    t.cells.flatMap((c, i) => (pick(c) > 0 ? [{ value: [Date.parse(c.at) + step / 2, lane(c)], count: pick(c), cell: i }] : []));
  const option: EChartsOption = {
    ...baseOption(t.lanes, range),
    series: [
      {
        type: 'custom',
        name: 'cells',
        encode: { x: [0, 1], y: 2 },
        data: t.cells.map((c, i) => ({ value: [Date.parse(c.at), Date.parse(c.at) + step, lane(c), i] })),
        renderItem: (p: CustomSeriesRenderItemParams, api: CustomSeriesRenderItemAPI): CustomSeriesRenderItemReturn => {
          const c = t.cells[api.value(3) as number] as TimelineCell;
          const shape = laneRect(p, api, api.value(0) as number, api.value(1) as number, api.value(2) as number, 0.7);
          if (!shape) return null;
          // Shade: the share of the bucket the key was held (at least faintly visible when it was used at all).
          const busy = Math.min(1, c.heldMs / step);
          return {
            type: 'rect',
            shape,
            style: { fill: colour(c.topHolder), opacity: 0.15 + 0.85 * busy, stroke: c.unprotected ? FORCE : undefined, lineWidth: c.unprotected ? 1 : 0 },
          };
        },
        tooltip: {
          formatter: (p) => {
            const c = t.cells[(p as { dataIndex: number }).dataIndex] as TimelineCell;
            return (
              `<b>${esc(c.key)}</b><br>${fmtTime(c.at)} + ${shortMs(step)}<br>held ${Math.round(Math.min(1, c.heldMs / step) * 100)} % · ${c.grants} grants · ${c.holders} holders<br>mostly ${esc(c.topHolder)}` +
              `${c.expiries ? `<br>${c.expiries} expiries` : ''}${c.forceReleases ? `<br>${c.forceReleases} force-releases` : ''}${c.unprotected ? `<br>${c.unprotected} unprotected` : ''}` +
              `${c.foreign ? `<br>${c.foreign} foreign grants` : ''}${c.deleted ? `<br>${c.deleted} deleted by hand` : ''}<br><i>click to zoom in</i>`
            );
          },
        },
        markArea: {
          silent: true,
          itemStyle: { color: 'rgba(166, 27, 27, 0.15)' },
          label: { color: FORCE, position: 'insideTop' },
          data: gapAreas(t.gaps, range) as never,
        },
      },
      {
        type: 'scatter',
        name: 'expiry',
        symbol: 'diamond',
        symbolSize: 9,
        itemStyle: { color: EXPIRY, borderColor: '#fff' },
        data: marks((c) => c.expiries),
        z: 5,
        tooltip: { formatter: (p) => `${(p.data as { count: number }).count} lease expiries` },
      },
      {
        type: 'scatter',
        name: 'force-release',
        symbol: 'triangle',
        symbolSize: 10,
        itemStyle: { color: FORCE, borderColor: '#fff' },
        data: marks((c) => c.forceReleases),
        z: 6,
        tooltip: { formatter: (p) => `${(p.data as { count: number }).count} force-releases` },
      },
      ...markSeries(
        'deleted',
        'rect',
        DELETED,
        marks((c) => c.deleted),
        (n) => `${n} deleted by hand (no marker, the lease outlived them)`,
        7,
      ),
      ...markSeries(
        'foreign',
        'circle',
        FOREIGN,
        marks((c) => c.foreign),
        (n) => `${n} foreign grants (not by the lock API)`,
        7,
      ),
    ],
  };
  const zoomInto = (c: TimelineCell | undefined) => {
    if (!c) return;
    const next = new URLSearchParams(params);
    next.set('from', c.at);
    next.set('to', new Date(Date.parse(c.at) + step).toISOString());
    // A prefix view zooms into the key of the cell.
    next.delete('keyPrefix');
    next.set('key', c.key);
    go('timeline', next);
  };
  const box = chartBox('timeline', option, t.lanes.length * LANE_PX + 110, (chart) => {
    chart.on('click', (p) => {
      const data = p.data as { cell?: number } | undefined;
      zoomInto(t.cells[p.seriesName === 'cells' ? p.dataIndex : (data?.cell ?? -1)]);
    });
  });
  return h(
    'div',
    {},
    h(
      'p',
      { class: 'summary' },
      `${t.totalGrants} grants in ${fmtTime(t.from)} – ${fmtTime(t.to)} (UTC): too many to draw one by one, so each cell is ${shortMs(step)}.`,
    ),
    box,
    h(
      'p',
      { class: 'muted' },
      'Shade: share of the bucket the key was held; colour: the holder that held it longest; red outline: unprotected grants; ◆ expiries; ▲ force-releases; ■ deleted by hand; ● foreign grants (not by the lock API); red band: history gap. Click a cell to zoom into it.',
    ),
  );
}

function gapList(gaps: TimelineGap[]): Node | false {
  return (
    gaps.length > 0 &&
    h(
      'div',
      { class: 'gaps' },
      h('h2', {}, 'History gaps in this window'),
      h(
        'ul',
        {},
        gaps.map((g) => h('li', {}, `${g.cluster}: revisions ${g.fromRevision}–${g.toRevision} (${g.reason}), ${fmtTime(g.fromTime)} – ${fmtTime(g.toTime)}`)),
      ),
    )
  );
}
