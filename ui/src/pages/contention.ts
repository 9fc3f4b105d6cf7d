// Contention: wait and hold percentiles over time and per namespace, class or
// key over a window, and the hottest keys (each a link to its timeline). The
// API aggregates in ClickHouse: at most 241 points a series, whatever the window.
import { getJson } from '../api.js';
import { chartBox, shortMs, type EChartsOption } from '../charts.js';
import { field, fmtMs, fmtTime, formParams, h, table } from '../dom.js';
import { errorBox, go, narrowedNote } from '../nav.js';
import { apiQuery, chosenSpan, spanButtons } from '../spans.js';
import type { Contention } from '../types.js';

export async function contentionPage(params: URLSearchParams): Promise<Node> {
  const by = params.get('by') ?? 'namespace';
  const form = h(
    'form',
    {
      class: 'filters',
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        go('contention', formParams(form));
      },
    },
    field('namespace', 'Namespace', params.get('namespace')),
    field('class', 'Class', params.get('class')),
    field('from', 'From (ISO 8601)', params.get('from')),
    field('to', 'To (ISO 8601)', params.get('to')),
    h(
      'label',
      {},
      'Group by',
      h(
        'select',
        { name: 'by' },
        ['namespace', 'class', 'key'].map((v) => h('option', { value: v, selected: v === by }, v)),
      ),
    ),
    field('top', 'Hottest keys', params.get('top') ?? '10'),
    h('button', { type: 'submit' }, 'Show'),
  );
  // Without a window the page shows the last 24 h: recent contention is what people come for.
  const span = chosenSpan(params);
  let report: Contention;
  try {
    report = await getJson<Contention>('/v1/reports/contention', apiQuery(params, span));
  } catch (err) {
    return h('div', {}, form, errorBox(err));
  }
  const num = (v: string | number) => h('span', { class: 'num' }, v);
  const groups = report.groups.map((g) => [
    g.group,
    num(g.grants),
    num(g.distinctHolders),
    fmtMs(g.waitMs.p50),
    fmtMs(g.waitMs.p95),
    fmtMs(g.waitMs.p99),
    fmtMs(g.holdMs.p50),
    fmtMs(g.holdMs.p99),
    fmtMs(g.handoffGapMs.p50),
    fmtMs(g.handoffGapMs.p95),
    `${(g.expiryRatio * 100).toFixed(1)} %`,
    num(g.forceReleases),
  ]);
  const hot = report.hottestKeys.map((k) => [
    h('a', { href: `#/timeline?${new URLSearchParams({ key: k.key, from: report.from, to: report.to })}` }, k.key),
    num(k.grants),
    num(k.distinctHolders),
    fmtMs(k.waitP95Ms),
    num(k.expiries),
    num(k.forceReleases),
  ]);
  return h(
    'div',
    {},
    form,
    spanButtons('contention', params, span, 'Window: the last '),
    h('p', { class: 'muted' }, `Window ${fmtTime(report.from)} – ${fmtTime(report.to)} (UTC), by ${report.by}.`),
    narrowedNote(report.narrowedTo),
    h('h2', {}, 'Wait and hold percentiles over time'),
    report.series.some((p) => p.grants > 0) ? percentileCharts(report) : h('p', { class: 'muted' }, 'No grants in this window.'),
    h('h2', {}, `Wait and hold percentiles by ${report.by}`),
    groups.length
      ? table(
          [
            report.by,
            'Grants',
            'Holders',
            'Wait p50',
            'Wait p95',
            'Wait p99',
            'Hold p50',
            'Hold p99',
            'Handoff p50',
            'Handoff p95',
            'Expiry ratio',
            'Force releases',
          ],
          groups,
          { class: 'groups' },
        )
      : h('p', { class: 'muted' }, 'No grants in this window.'),
    h('h2', {}, 'Hottest keys'),
    hot.length > 0 && hotChart(report),
    hot.length ? table(['Key', 'Grants', 'Holders', 'Wait p95', 'Expiries', 'Force releases'], hot, { class: 'hot' }) : h('p', { class: 'muted' }, 'None.'),
  );
}

/** Lines per percentile over the report's buckets; an empty bucket is a break in the line, not a zero. */
function percentileCharts(report: Contention): HTMLElement {
  const at = (i: number) => Date.parse((report.series[i] as Contention['series'][number]).at);
  const line = (name: string, pick: (p: Contention['series'][number]) => number | null) => ({
    type: 'line' as const,
    name,
    symbolSize: 4,
    connectNulls: false,
    data: report.series.map((p, i) => [at(i), pick(p)]),
  });
  const timeOption = (title: string): EChartsOption => ({
    animation: false,
    grid: { left: 10, right: 24, top: 36, bottom: 30, containLabel: true },
    legend: { top: 0 },
    xAxis: { type: 'time', min: Date.parse(report.from), max: Date.parse(report.to) },
    yAxis: { type: 'value', name: title, axisLabel: { formatter: (v: number) => shortMs(v) } },
    tooltip: { trigger: 'axis', valueFormatter: (v) => (typeof v === 'number' ? shortMs(v) : '—') },
  });
  const waits: EChartsOption = {
    ...timeOption('wait'),
    series: [line('wait p50', (p) => p.waitMs.p50), line('wait p95', (p) => p.waitMs.p95), line('wait p99', (p) => p.waitMs.p99)],
  };
  const holds: EChartsOption = {
    ...timeOption('hold'),
    series: [line('hold p50', (p) => p.holdMs.p50), line('hold p99', (p) => p.holdMs.p99)],
  };
  const volume: EChartsOption = {
    ...timeOption('grants'),
    yAxis: [
      { type: 'value', name: 'grants' },
      { type: 'value', name: 'ends', splitLine: { show: false } },
    ],
    tooltip: { trigger: 'axis' },
    series: [
      { type: 'bar', name: 'grants', data: report.series.map((p, i) => [at(i), p.grants]), itemStyle: { color: '#9fb7cc' } },
      { type: 'line', name: 'expiries', yAxisIndex: 1, symbolSize: 3, data: report.series.map((p, i) => [at(i), p.expiries]), itemStyle: { color: '#e07b39' } },
      {
        type: 'line',
        name: 'force-releases',
        yAxisIndex: 1,
        symbolSize: 3,
        data: report.series.map((p, i) => [at(i), p.forceReleases]),
        itemStyle: { color: '#a61b1b' },
      },
    ],
  };
  return h(
    'div',
    { class: 'charts' },
    chartBox('contention-wait', waits, 240),
    chartBox('contention-hold', holds, 240),
    chartBox('contention-volume', volume, 200),
    h('p', { class: 'muted' }, `One point per ${shortMs(report.bucketSeconds * 1000)} bucket, by grant time; click a legend entry to hide a line.`),
  );
}

/** The hottest keys as bars; a click opens the key's timeline over the same window. */
function hotChart(report: Contention): HTMLElement {
  const keys = report.hottestKeys;
  const option: EChartsOption = {
    animation: false,
    grid: { left: 10, right: 30, top: 10, bottom: 10, containLabel: true },
    xAxis: { type: 'value', name: 'grants' },
    yAxis: { type: 'category', inverse: true, data: keys.map((k) => k.key) },
    tooltip: { trigger: 'item' },
    series: [{ type: 'bar', name: 'grants', data: keys.map((k) => k.grants), itemStyle: { color: '#3b82c4' }, cursor: 'pointer' }],
  };
  return chartBox('contention-hot', option, keys.length * 26 + 30, (chart) => {
    chart.on('click', (p) => {
      const k = keys[p.dataIndex];
      if (k) go('timeline', new URLSearchParams({ key: k.key, from: report.from, to: report.to }));
    });
  });
}
