// Keyspace at a moment: every hold, queue entry and class in force at one
// revision (or time) under a prefix, a slider to move through revisions, and
// the diff between two moments. Reads GET /v1/state and GET /v1/diff.
import { getJson } from '../api.js';
import { field, fmtTime, formParams, h, table } from '../dom.js';
import { errorBox, go, narrowedNote } from '../nav.js';
import type { GapRef, KeyspaceDiff, KeyspaceState } from '../types.js';

const gapText = (g: GapRef): string => `revisions ${g.fromRevision}–${g.toRevision} (${g.reason})`;
const show = (v: unknown): string => (v === null || v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v));

/** The slider: revisions from `lo` to the captured head; releasing it opens the state at that revision. */
function slider(params: URLSearchParams, state: KeyspaceState): HTMLElement {
  const hi = Number(state.at.capturedThrough);
  const at = Number(state.at.revision);
  const lo = Math.max(1, Number(params.get('lo') ?? Math.max(1, at - 500)));
  const label = h('output', {}, String(at));
  const input = h('input', { type: 'range', name: 'slider', min: lo, max: hi, step: 1, value: at });
  input.addEventListener('input', () => (label.textContent = input.value));
  input.addEventListener('change', () => {
    const p = new URLSearchParams(params);
    p.set('at', input.value);
    p.set('lo', String(lo));
    go('keyspace', p);
  });
  return h('div', { class: 'spans' }, h('span', { class: 'muted' }, String(lo)), input, h('span', { class: 'muted' }, String(hi)), 'revision ', label);
}

function stateView(s: KeyspaceState): Node {
  const holdRows = s.holds.map((x) => [
    h('a', { href: `#/timeline?key=${encodeURIComponent(x.key)}` }, x.key),
    x.holder,
    x.class,
    h('code', {}, x.token),
    x.grantRevision,
    fmtTime(x.since) + (x.startKnown ? '' : ' (seen after a gap)'),
  ]);
  return h(
    'div',
    {},
    h(
      'p',
      { class: 'summary' },
      `${s.cluster} at revision ${s.at.revision} (captured through ${s.at.capturedThrough})${s.epoch ? `, epoch ${s.epoch.epoch}` : ''}`,
    ),
    !s.complete &&
      h(
        'p',
        { class: 'error', role: 'alert' },
        `This revision lies inside a history gap: ${s.gaps.map(gapText).join('; ')}. Holds granted and ended inside it are not in the log.`,
      ),
    s.unknown.length > 0 &&
      h(
        'div',
        {},
        h('h2', {}, 'Unknown at this revision'),
        table(
          ['Key', 'Kind', 'Why', 'Gap', 'Last known holder'],
          s.unknown.map((u) => [u.key, u.kind, u.reason, u.gap ? gapText(u.gap) : '—', u.lastKnownHolder ?? '—']),
          { class: 'unknown' },
        ),
      ),
    h('h2', {}, `Holds (${s.holds.length}${s.truncated ? '+' : ''})`),
    s.holds.length
      ? table(['Key', 'Holder', 'Class', 'Token', 'Grant revision', 'Since'], holdRows, { class: 'holds' })
      : h('p', { class: 'muted' }, 'Nothing held.'),
    s.queue.length > 0 &&
      h(
        'div',
        {},
        h('h2', {}, 'Waiting (durable queues)'),
        table(
          ['Key', 'Waiter', 'Class', 'Since'],
          s.queue.map((q) => [q.key, q.holder, q.class, fmtTime(q.since)]),
        ),
      ),
    h('h2', {}, 'Classes'),
    s.classes.length
      ? table(
          ['Class', 'Revision', 'Purpose', 'Enforcement', 'TTL'],
          s.classes.map((c) => [c.name, c.revision, show(c.definition.purpose), show(c.definition.enforcement), show(c.definition.ttlSeconds)]),
        )
      : h('p', { class: 'muted' }, 'No classes.'),
  );
}

function diffView(d: KeyspaceDiff): Node {
  return h(
    'div',
    { class: 'diff' },
    h('h2', {}, `Changes from revision ${d.from.revision} to ${d.to.revision}`),
    d.gaps.length > 0 && h('p', { class: 'error', role: 'alert' }, `History is missing inside this window: ${d.gaps.map(gapText).join('; ')}.`),
    table(
      ['Change', 'Key', 'Holder', 'Revision', 'How / who'],
      [
        ...d.holds.appeared.map((x) => ['appeared', x.key, x.holder, x.grantRevision, 'granted']),
        ...d.holds.ended.map((x) => ['ended', x.key, x.holder, x.endRevision ?? '—', `${x.endKind}${x.endedBy ? ` by ${x.endedBy}` : ''}`]),
        ...d.holds.changedHolder.map((c) => ['holder changed', c.key, `${c.before.holder} → ${c.after.holder}`, c.after.grantRevision, '']),
        ...d.forceReleases.map((f) => ['force-release', f.key, f.holder, f.revision, `requested by ${f.requester}, approved by ${f.approver}: ${f.reason}`]),
        ...d.epochAdvances.map((e) => ['epoch advance', '', '', e.revision, `to ${e.epoch}${e.by ? ` by ${e.by}` : ''}`]),
        ...d.classes.created.map((c) => ['class created', c.name, '', c.revision, '']),
        ...d.classes.changed.map((c) => [
          'class changed',
          c.name,
          '',
          c.revision,
          c.fields.map((f) => `${f.field}: ${show(f.before)} → ${show(f.after)}`).join('; '),
        ]),
        ...d.classes.deleted.map((c) => ['class deleted', c.name, '', c.revision, '']),
      ],
      { class: 'diff' },
    ),
  );
}

export async function keyspacePage(params: URLSearchParams): Promise<Node> {
  const form = h(
    'form',
    {
      class: 'filters',
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        go('keyspace', formParams(form));
      },
    },
    field('prefix', 'Key prefix', params.get('prefix'), 'payments/'),
    field('at', 'At (revision or ISO 8601)', params.get('at'), '2025-11-29T14:03:07.250Z'),
    field('from', 'Diff from (revision or ISO 8601)', params.get('from'), ''),
    field('cluster', 'Cluster', params.get('cluster'), ''),
    h('button', { type: 'submit' }, 'Show'),
  );
  // No moment chosen: the present (the newest captured revision), not an empty page.
  const at = params.get('at') ?? new Date().toISOString();
  const q = new URLSearchParams();
  for (const k of ['prefix', 'cluster']) if (params.get(k)) q.set(k, params.get(k) as string);
  try {
    const state = await getJson<KeyspaceState>('/v1/state', new URLSearchParams([...q, ['at', at]]));
    const from = params.get('from');
    const diff = from ? await getJson<KeyspaceDiff>('/v1/diff', new URLSearchParams([...q, ['from', from], ['to', state.at.revision]])) : undefined;
    return h('div', {}, form, narrowedNote(state.narrowedTo), slider(params, state), diff && diffView(diff), stateView(state));
  } catch (err) {
    return h('div', {}, form, errorBox(err));
  }
}
