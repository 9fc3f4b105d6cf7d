// Tailer health: per etcd cluster the elected leader, checkpoint, lag behind
// the head revision and history gaps; the lag over a chosen span (aggregated
// by the API into at most 241 points a cluster); then the gaps themselves and,
// for tokens allowed to read them, the quarantined changes.
import { getJson } from '../api.js';
import { callerHas } from '../caller.js';
import { chartBox, shortMs, type EChartsOption } from '../charts.js';
import { fmtTime, h, table, type Child } from '../dom.js';
import { errorBox } from '../nav.js';
import { apiQuery, chosenSpan, spanButtons } from '../spans.js';
import type { Gap, Tailer, TailerLag } from '../types.js';
import { quarantineSection } from './quarantine.js';

export async function tailersPage(params: URLSearchParams): Promise<Node> {
  const span = chosenSpan(params);
  const lagQuery = apiQuery(params, span);
  let tailers: Tailer[];
  let gaps: Gap[];
  let lag: TailerLag;
  // Quarantined raw values are for auditors and investigators only: a token without those roles never asks.
  const quarantine = callerHas('auditor', 'investigator') ? quarantineSection() : undefined;
  try {
    [{ items: tailers }, { items: gaps }, lag] = await Promise.all([
      getJson<{ items: Tailer[] }>('/v1/tailers'),
      getJson<{ items: Gap[] }>('/v1/gaps'),
      getJson<TailerLag>('/v1/tailers/lag', lagQuery),
    ]);
  } catch (err) {
    return errorBox(err);
  }
  const rows = tailers.map((t) => [
    t.cluster,
    t.leader ?? h('span', { class: 'bad' }, 'no leader'),
    t.checkpoint,
    t.headRevision ?? '—',
    t.lagRevisions ?? '—',
    t.lagSeconds === null ? '—' : `${t.lagSeconds.toFixed(1)} s`,
    t.compactRevision ?? '—',
    fmtTime(t.statusAt),
    t.gaps ? h('span', { class: 'bad' }, String(t.gaps)) : h('span', { class: 'good' }, '0'),
  ]);
  return h(
    'div',
    {},
    tailers.length
      ? table(['Cluster', 'Leader', 'Checkpoint', 'Head', 'Lag (revisions)', 'Lag', 'Compacted at', 'Status at', 'Gaps'], rows, { class: 'tailers' })
      : h('p', { class: 'muted' }, 'No clusters.'),
    h('h2', {}, 'Lag over time'),
    spanButtons('tailers', params, span, 'Lag over the last '),
    lag.clusters.length ? lagChart(lag, gaps) : h('p', { class: 'muted' }, 'No tailer published status in this span.'),
    h('h2', {}, 'Gaps (history lost before capture)'),
    gaps.length
      ? table(['Cluster', 'From revision', 'To revision', 'Detected at', 'Reason', 'Kind', 'Cluster ids'], gaps.map(gapRow), { class: 'gaps' })
      : h('p', { class: 'good' }, 'No gaps.'),
    quarantine ? [h('h2', {}, 'Quarantined changes (set aside so capture went on)'), await quarantine] : null,
  );
}

/** A gap's row: its kind (a restore also says whether history was lost, and both cluster ids: an unchanged id is a restore with the same token). */
function gapRow(g: Gap): Child[] {
  const kind =
    g.kind === 'restore'
      ? h('span', { class: 'bad', 'data-kind': g.kind }, g.historyLost ? 'restore (history lost)' : 'restore')
      : h('span', { 'data-kind': g.kind }, g.kind);
  const ids = g.kind === 'restore' ? `${g.previousClusterId ?? '?'} → ${g.clusterId ?? '?'}` : '—';
  return [g.cluster, g.fromRevision, g.toRevision, fmtTime(g.detectedAt), g.reason, kind, ids];
}

/** Worst lag per bucket: seconds (solid, left axis) and revisions (dashed, right axis) per cluster; gaps as red marks at detection. */
function lagChart(lag: TailerLag, gaps: Gap[]): HTMLElement {
  const from = Date.parse(lag.from);
  const to = Date.parse(lag.to);
  const gapLines = gaps
    .map((g) => Date.parse(g.detectedAt))
    .filter((t) => t >= from && t <= to)
    .map((xAxis) => ({ xAxis }));
  const option: EChartsOption = {
    animation: false,
    grid: { left: 10, right: 24, top: 36, bottom: 30, containLabel: true },
    legend: { top: 0 },
    xAxis: { type: 'time', min: from, max: to },
    yAxis: [
      { type: 'value', name: 'lag', axisLabel: { formatter: (v: number) => shortMs(v * 1000) } },
      { type: 'value', name: 'revisions', splitLine: { show: false } },
    ],
    tooltip: { trigger: 'axis' },
    series: lag.clusters.flatMap((c, i) => [
      {
        type: 'line' as const,
        name: `${c.cluster} lag (s)`,
        symbolSize: 4,
        connectNulls: false,
        data: c.series.map((p) => [Date.parse(p.at), p.lagSecondsMax]),
        ...(i === 0 ? { markLine: { silent: true, symbol: 'none', lineStyle: { color: '#a61b1b' }, label: { formatter: 'gap' }, data: gapLines } } : {}),
      },
      {
        type: 'line' as const,
        name: `${c.cluster} lag (revisions)`,
        yAxisIndex: 1,
        symbolSize: 4,
        connectNulls: false,
        lineStyle: { type: 'dashed' as const },
        data: c.series.map((p) => [Date.parse(p.at), p.lagRevisionsMax === null ? null : Number(p.lagRevisionsMax)]),
      },
    ]),
  };
  return h(
    'div',
    {},
    chartBox('tailer-lag', option, 260),
    h('p', { class: 'muted' }, `Worst lag per ${shortMs(lag.bucketSeconds * 1000)} bucket; a break in a line: no tailer published status then.`),
  );
}
