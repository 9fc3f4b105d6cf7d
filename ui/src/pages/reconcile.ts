// Reconciliation: grants issued without quorum (token 0), the protected grants
// that overlapped them on the same key, and the reconcile action (a note).
import { getJson, postJson } from '../api.js';
import { caller, callerHas } from '../caller.js';
import { narrowedNote } from '../nav.js';
import { field, fmtMs, fmtTime, formParams, h, table } from '../dom.js';
import { errorBox, go } from '../nav.js';
import type { UnprotectedItem, UnprotectedReport } from '../types.js';

export async function reconcilePage(params: URLSearchParams): Promise<Node> {
  const form = h(
    'form',
    {
      class: 'filters',
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        go('reconcile', formParams(form));
      },
    },
    field('from', 'From (ISO 8601)', params.get('from')),
    field('to', 'To (ISO 8601)', params.get('to')),
    h('button', { type: 'submit' }, 'Show'),
  );
  let report: UnprotectedReport;
  try {
    report = await getJson<UnprotectedReport>('/v1/reports/unprotected', params);
  } catch (err) {
    return h('div', {}, form, errorBox(err));
  }
  const rows = report.items.map((u) => [
    h('a', { href: `#/timeline?${new URLSearchParams({ key: u.key })}` }, u.key),
    u.holder,
    u.class,
    h('code', {}, u.spoolId),
    fmtTime(u.grantedAt),
    fmtTime(u.endedAt),
    u.overlapping.length
      ? h(
          'ul',
          { class: 'bad' },
          u.overlapping.map((g) => h('li', {}, `${g.holder} (token ${g.token}) ${fmtTime(g.grantedAt)} – ${fmtTime(g.endedAt)}, ${fmtMs(g.durationMs)}`)),
        )
      : h('span', { class: 'muted' }, 'none'),
    u.reconciliation
      ? h(
          'span',
          { class: 'reconciled' },
          `“${u.reconciliation.note}” — ${u.reconciliation.reconciledBy}, ${fmtTime(u.reconciliation.reconciledAt)}${u.reconciliation.notes > 1 ? ` (${u.reconciliation.notes} notes)` : ''}`,
        )
      : h('span', { class: 'bad' }, 'not reconciled'),
    callerHas('lock-operator') && !caller()?.scope
      ? action(u)
      : h('span', { class: 'muted' }, caller()?.scope ? 'reconciling needs a token without a scope' : 'a lock-operator reconciles'),
  ]);
  const t = table(['Key', 'Holder', 'Class', 'Spool id', 'Granted at', 'Ended at', 'Overlapping protected grants', 'Reconciliation', 'Action'], rows, {
    class: 'unprotected',
  });
  t.querySelectorAll('tbody tr').forEach((tr, i) => tr.setAttribute('data-id', report.items[i]?.id ?? ''));
  return h(
    'div',
    {},
    form,
    h('p', { class: 'muted' }, `Window ${fmtTime(report.from)} – ${fmtTime(report.to)} (UTC).`),
    narrowedNote(report.narrowedTo),
    report.truncated && h('p', { class: 'error' }, 'More unprotected grants than shown: narrow the window.'),
    report.items.length ? t : h('p', { class: 'muted' }, 'No unprotected grants in this window.'),
  );
}

/** The reconcile form of one row (role lock-operator); the page reloads to show the recorded note. */
function action(u: UnprotectedItem): HTMLFormElement {
  const note = h('input', { name: 'note', placeholder: 'What was checked and decided', required: true, maxlength: 4000 });
  const form = h(
    'form',
    {
      class: 'reconcile',
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        const button = form.querySelector('button');
        button?.setAttribute('disabled', '');
        postJson(`/v1/reports/unprotected/${u.id}/reconcile`, { note: note.value.trim() })
          .then(() => window.dispatchEvent(new HashChangeEvent('hashchange')))
          .catch((err) => {
            button?.removeAttribute('disabled');
            form.append(errorBox(err));
          });
      },
    },
    note,
    h('button', { type: 'submit' }, 'Reconcile'),
  );
  return form;
}
