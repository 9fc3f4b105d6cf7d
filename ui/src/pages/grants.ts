// Grant search: the /v1/grants filters, a page of results, paging by cursor
// and a CSV download of the same filters.
import { download, getJson } from '../api.js';
import { field, fmtMs, fmtTime, formParams, h, table } from '../dom.js';
import { errorBox, go, narrowedNote } from '../nav.js';
import type { GrantPage } from '../types.js';

const FILTERS: [string, string, string][] = [
  ['key', 'Key', 'payments/acct-42'],
  ['keyPrefix', 'Key prefix', 'payments/'],
  ['holder', 'Holder', ''],
  ['class', 'Class', ''],
  ['namespace', 'Namespace', ''],
  ['token', 'Token', ''],
  ['from', 'From (ISO 8601)', '2025-11-29T03:00:00Z'],
  ['to', 'To (ISO 8601)', ''],
];

// Newest first, as audit logs open (the API's default); a cursor keeps the order it was issued for.
const ORDERS: [string, string][] = [
  ['desc', 'Newest first'],
  ['asc', 'Oldest first'],
];

export async function grantsPage(params: URLSearchParams): Promise<Node> {
  const limit = params.get('limit') ?? '50';
  const order = params.get('order') === 'asc' ? 'asc' : 'desc';
  const form = h(
    'form',
    {
      class: 'filters',
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        go('grants', formParams(form));
      },
    },
    FILTERS.map(([name, label, ph]) => field(name, label, params.get(name), ph)),
    h(
      'label',
      {},
      'Order',
      h(
        'select',
        { name: 'order' },
        ORDERS.map(([v, text]) => h('option', { value: v, selected: v === order }, text)),
      ),
    ),
    field('limit', 'Page size', limit),
    h('button', { type: 'submit' }, 'Search'),
  );
  // The filters alone and the order (no cursor, limit or format): what the CSV and the pager carry over.
  const filters = new URLSearchParams([...params].filter(([k]) => FILTERS.some(([f]) => f === k)));
  filters.set('order', order);
  const query = new URLSearchParams(filters);
  query.set('limit', limit);
  const cursor = params.get('cursor');
  if (cursor) query.set('cursor', cursor);

  let page: GrantPage;
  try {
    page = await getJson<GrantPage>('/v1/grants', query);
  } catch (err) {
    return h('div', {}, form, errorBox(err));
  }
  const timelineLink = (key: string) => {
    const p = new URLSearchParams({ key });
    for (const k of ['from', 'to']) if (params.get(k)) p.set(k, params.get(k) as string);
    return h('a', { href: `#/timeline?${p}` }, key);
  };
  const rows = page.items.map((g) => [
    fmtTime(g.grantedAt),
    timelineLink(g.key),
    g.holder,
    g.class,
    h('code', {}, g.token),
    fmtMs(g.waitMs),
    fmtMs(g.durationMs),
    g.endKind ?? 'held',
    g.unprotected ? h('span', { class: 'bad' }, 'yes') : 'no',
    // The keyspace around this grant, at its grant revision (unprotected grants have none).
    g.unprotected
      ? '—'
      : h('a', { href: `#/keyspace?${new URLSearchParams({ at: g.grantRevision, prefix: g.key, cluster: g.cluster })}`, class: 'at-grant' }, 'state'),
  ]);
  const next = new URLSearchParams(filters);
  next.set('limit', limit);
  if (page.nextCursor) next.set('cursor', page.nextCursor);
  const first = new URLSearchParams(filters);
  first.set('limit', limit);
  const csv = h(
    'button',
    {
      type: 'button',
      onclick: () => {
        const p = new URLSearchParams(query);
        p.set('format', 'csv');
        download('/v1/grants', p, 'grants.csv').catch((err) => csv.after(errorBox(err)));
      },
    },
    'Download CSV',
  );
  return h(
    'div',
    {},
    form,
    narrowedNote(page.narrowedTo),
    page.items.length
      ? table(['Granted at', 'Key', 'Holder', 'Class', 'Token', 'Wait', 'Held', 'Ended by', 'Unprotected', 'At grant'], rows, { class: 'grants' })
      : h('p', { class: 'muted' }, 'No grants match.'),
    h(
      'div',
      { class: 'pager' },
      cursor && h('a', { href: `#/grants?${first}` }, 'First page'),
      page.nextCursor ? h('a', { href: `#/grants?${next}`, class: 'next' }, 'Next page') : h('span', { class: 'muted' }, 'Last page'),
      csv,
    ),
  );
}
