// Tailer health: per etcd cluster the elected leader, checkpoint, lag behind
// the head revision and history gaps; then the gaps themselves.
import { getJson } from '../api.js';
import { fmtTime, h, table } from '../dom.js';
import { errorBox } from '../nav.js';
import type { Gap, Tailer } from '../types.js';

export async function tailersPage(): Promise<Node> {
  let tailers: Tailer[];
  let gaps: Gap[];
  try {
    [{ items: tailers }, { items: gaps }] = await Promise.all([getJson<{ items: Tailer[] }>('/v1/tailers'), getJson<{ items: Gap[] }>('/v1/gaps')]);
  } catch (err) {
    return errorBox(err);
  }
  const rows = tailers.map((t) => [
    t.cluster, t.leader ?? h('span', { class: 'bad' }, 'no leader'), t.checkpoint, t.headRevision ?? '—', t.lagRevisions ?? '—',
    t.lagSeconds === null ? '—' : `${t.lagSeconds.toFixed(1)} s`, t.compactRevision ?? '—', fmtTime(t.statusAt),
    t.gaps ? h('span', { class: 'bad' }, String(t.gaps)) : h('span', { class: 'good' }, '0'),
  ]);
  return h(
    'div',
    {},
    tailers.length ? table(['Cluster', 'Leader', 'Checkpoint', 'Head', 'Lag (revisions)', 'Lag', 'Compacted at', 'Status at', 'Gaps'], rows, { class: 'tailers' }) : h('p', { class: 'muted' }, 'No clusters.'),
    h('h2', {}, 'Gaps (history lost before capture)'),
    gaps.length
      ? table(['Cluster', 'From revision', 'To revision', 'Detected at', 'Reason'], gaps.map((g) => [g.cluster, g.fromRevision, g.toRevision, fmtTime(g.detectedAt), g.reason]), { class: 'gaps' })
      : h('p', { class: 'good' }, 'No gaps.'),
  );
}
