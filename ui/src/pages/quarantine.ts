// Quarantined changes on the tailer page (issue 11, defect 8): what the
// tailer set aside so capture went on — revision, key, reason and the raw
// value. Raw values are whatever was written into etcd: always set as text
// (never markup), cut to a preview with the whole value one click away.
import { getJson } from '../api.js';
import { fmtTime, h, table, type Child } from '../dom.js';
import { errorBox } from '../nav.js';
import type { QuarantineItem, QuarantinePage } from '../types.js';

/** Characters of a raw value shown before it is cut; the rest opens on a click. */
export const RAW_PREVIEW_CHARS = 120;
const PAGE_SIZE = '50';

/** The newest window of quarantined changes, a page at a time (oldest first, as the API pages them). */
export async function quarantineSection(): Promise<Node> {
  let first: QuarantinePage;
  try {
    first = await getJson<QuarantinePage>('/v1/quarantine', new URLSearchParams({ limit: PAGE_SIZE }));
  } catch (err) {
    return errorBox(err);
  }
  if (!first.items.length) return h('p', { class: 'good' }, 'No quarantined changes.');
  const t = table(['Cluster', 'Revision', 'Key', 'Op', 'Reason', 'Quarantined at', 'Raw value'], first.items.map(row), { class: 'quarantine' });
  const body = t.tBodies[0];
  const box = h('div', {}, t);
  let cursor = first.nextCursor;
  if (cursor && body) {
    const more = h('button', { type: 'button', class: 'more' }, 'More');
    more.addEventListener('click', () => {
      if (!cursor) return;
      more.disabled = true;
      getJson<QuarantinePage>('/v1/quarantine', new URLSearchParams({ limit: PAGE_SIZE, cursor }))
        .then((page) => {
          body.append(
            ...page.items.map((i) =>
              h(
                'tr',
                {},
                row(i).map((c) => h('td', {}, c)),
              ),
            ),
          );
          cursor = page.nextCursor;
          if (cursor) more.disabled = false;
          else more.remove();
        })
        .catch((err: unknown) => more.replaceWith(errorBox(err)));
    });
    box.append(more);
  }
  return box;
}

function row(q: QuarantineItem): Child[] {
  return [q.cluster, q.revision, q.key, q.op, q.reason, fmtTime(q.quarantinedAt), q.valueTruncated ? truncatedValue(q) : rawValue(q.value)];
}

/** A value larger than the API answers: its first bytes, with its whole size and sha256 to find it by. */
function truncatedValue(q: QuarantineItem): Node {
  return h('div', {}, rawValue(q.value), h('div', { class: 'raw-note' }, `first bytes of ${q.valueBytes} — sha256 ${q.valueSha256}`));
}

/** A short value as it is; a long one cut, with its length, and the whole of it in a <details>. */
export function rawValue(value: string): Node {
  const chars = Array.from(value); // code points: a cut never splits a surrogate pair
  if (chars.length <= RAW_PREVIEW_CHARS) return h('code', { class: 'raw' }, value);
  return h(
    'details',
    { class: 'raw' },
    h('summary', {}, h('code', {}, `${chars.slice(0, RAW_PREVIEW_CHARS).join('')}…`), ` (${chars.length} characters: show all)`),
    h('pre', { class: 'raw-full' }, value),
  );
}
