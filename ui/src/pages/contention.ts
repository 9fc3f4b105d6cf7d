// Contention: wait and hold percentiles per namespace, class or key over a
// window, and the hottest keys (each a link to its timeline).
import { getJson } from '../api.js';
import { field, fmtMs, fmtTime, formParams, h, table } from '../dom.js';
import { errorBox, go } from '../nav.js';
import type { Contention } from '../types.js';

export async function contentionPage(params: URLSearchParams): Promise<Node> {
  const by = params.get('by') ?? 'namespace';
  const form = h(
    'form',
    { class: 'filters', onsubmit: (ev: Event) => { ev.preventDefault(); go('contention', formParams(form)); } },
    field('namespace', 'Namespace', params.get('namespace')),
    field('class', 'Class', params.get('class')),
    field('from', 'From (ISO 8601)', params.get('from')),
    field('to', 'To (ISO 8601)', params.get('to')),
    h('label', {}, 'Group by', h('select', { name: 'by' }, ['namespace', 'class', 'key'].map((v) => h('option', { value: v, selected: v === by }, v)))),
    field('top', 'Hottest keys', params.get('top') ?? '10'),
    h('button', { type: 'submit' }, 'Show'),
  );
  let report: Contention;
  try {
    report = await getJson<Contention>('/v1/reports/contention', params);
  } catch (err) {
    return h('div', {}, form, errorBox(err));
  }
  const num = (v: string | number) => h('span', { class: 'num' }, v);
  const groups = report.groups.map((g) => [
    g.group, num(g.grants), num(g.distinctHolders), fmtMs(g.waitMs.p50), fmtMs(g.waitMs.p95), fmtMs(g.waitMs.p99), fmtMs(g.holdMs.p50), fmtMs(g.holdMs.p99),
    fmtMs(g.handoffGapMs.p50), fmtMs(g.handoffGapMs.p95), `${(g.expiryRatio * 100).toFixed(1)} %`, num(g.forceReleases),
  ]);
  const hot = report.hottestKeys.map((k) => [
    h('a', { href: `#/timeline?${new URLSearchParams({ key: k.key, from: report.from, to: report.to })}` }, k.key),
    num(k.grants), num(k.distinctHolders), fmtMs(k.waitP95Ms), num(k.expiries), num(k.forceReleases),
  ]);
  return h(
    'div',
    {},
    form,
    h('p', { class: 'muted' }, `Window ${fmtTime(report.from)} – ${fmtTime(report.to)} (UTC), by ${report.by}.`),
    h('h2', {}, 'Wait and hold percentiles'),
    groups.length
      ? table([report.by, 'Grants', 'Holders', 'Wait p50', 'Wait p95', 'Wait p99', 'Hold p50', 'Hold p99', 'Handoff p50', 'Handoff p95', 'Expiry ratio', 'Force releases'], groups, { class: 'groups' })
      : h('p', { class: 'muted' }, 'No grants in this window.'),
    h('h2', {}, 'Hottest keys'),
    hot.length ? table(['Key', 'Grants', 'Holders', 'Wait p95', 'Expiries', 'Force releases'], hot, { class: 'hot' }) : h('p', { class: 'muted' }, 'None.'),
  );
}
