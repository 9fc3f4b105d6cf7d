// The advisory-lock risk register: the newest stored register (or a chosen
// day's), one row per advisory class, coloured by waiver status.
import { ApiError, getJson, postJson } from '../api.js';
import { field, fmtTime, formParams, h, table } from '../dom.js';
import { errorBox, go } from '../nav.js';
import type { Register } from '../types.js';

export async function riskPage(params: URLSearchParams): Promise<Node> {
  const form = h(
    'form',
    {
      class: 'filters',
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        go('risk', formParams(form));
      },
    },
    field('date', 'Date (YYYY-MM-DD; empty: newest)', params.get('date')),
    h('button', { type: 'submit' }, 'Show'),
  );
  // Builds a register now (role auditor); the nightly job does the same on its schedule.
  const build = h(
    'button',
    {
      type: 'button',
      onclick: () => {
        build.setAttribute('disabled', '');
        postJson<Register>('/v1/reports/risk-register/run', {})
          .then(() => go('risk'))
          .catch((err) => build.after(errorBox(err)));
      },
    },
    'Build now',
  );
  let reg: Register;
  try {
    reg = await getJson<Register>('/v1/reports/risk-register', params);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'LOCKAUDIT_ERR_REPORT_NOT_FOUND') return h('div', {}, form, h('p', { class: 'muted' }, err.message), build);
    return h('div', {}, form, errorBox(err));
  }
  // The register's date is in the server's register time zone; compare with the local day only as a hint.
  const today = new Date().toISOString().slice(0, 10);
  const counts = { ok: 0, expiring: 0, expired: 0, unproven: 0 };
  for (const c of reg.classes) counts[c.status] += 1;
  const rows = reg.classes.map((c) => [
    c.class,
    c.namespace,
    c.riskOwner,
    c.waiverExpires ?? '—',
    c.daysLeft ?? '—',
    c.status,
    `${c.grants24h} / ${c.grants30d}`,
    `${c.distinctKeys24h} / ${c.distinctKeys30d}`,
    `${c.expiries24h} / ${c.expiries30d}`,
    `${c.forceReleases24h} / ${c.forceReleases30d}`,
    `${c.unprotected24h} / ${c.unprotected30d}`,
    `${c.foreignGrants24h} / ${c.foreignGrants30d}`,
    `${c.deleted24h} / ${c.deleted30d}`,
  ]);
  const t = table(
    [
      'Class',
      'Namespace',
      'Risk owner',
      'Waiver expires',
      'Days left',
      'Status',
      'Grants 24h / 30d',
      'Keys 24h / 30d',
      'Expiries 24h / 30d',
      'Force releases 24h / 30d',
      'Unprotected 24h / 30d',
      'Foreign grants 24h / 30d',
      'Deleted by hand 24h / 30d',
    ],
    rows,
    { class: 'register' },
  );
  // Status colours are per row: mark each row and its status cell.
  t.querySelectorAll('tbody tr').forEach((tr, i) => {
    tr.className = `status-${reg.classes[i]?.status}`;
    tr.children[5]?.classList.add('status');
  });
  return h(
    'div',
    {},
    form,
    h(
      'p',
      {},
      `Register of ${reg.date}`,
      reg.date !== today && h('span', { class: 'muted' }, ' (not today)'),
      ` — as of ${fmtTime(reg.asOf)}, ${reg.trigger === 'manual' ? `built on demand by ${reg.requestedBy}` : 'nightly run'}. `,
      h('span', { class: 'good' }, `${counts.ok} ok`),
      ', ',
      h('span', {}, `${counts.expiring} expiring`),
      ', ',
      h('span', { class: 'bad' }, `${counts.expired} expired`),
      counts.unproven > 0 && h('span', { class: 'bad' }, `, ${counts.unproven} unproven (not written by the lock API)`),
      '. ',
      build,
    ),
    reg.classes.length ? t : h('p', { class: 'muted' }, 'No advisory classes.'),
  );
}
