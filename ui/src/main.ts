// The console shell: sign-in, navigation and a hash router (#/page?query), so
// the server serves one index.html and every view is a bookmarkable URL.
import './style.css';
import { ApiError, SIGNED_OUT, session } from './api.js';
import { h } from './dom.js';
import { errorBox } from './nav.js';
import { contentionPage } from './pages/contention.js';
import { grantsPage } from './pages/grants.js';
import { reconcilePage } from './pages/reconcile.js';
import { riskPage } from './pages/risk.js';
import { tailersPage } from './pages/tailers.js';
import { timelinePage } from './pages/timeline.js';

import type { Page } from './nav.js';

const pages: { path: string; title: string; render: Page }[] = [
  { path: 'grants', title: 'Grants', render: grantsPage },
  { path: 'timeline', title: 'Key timeline', render: timelinePage },
  { path: 'contention', title: 'Contention', render: contentionPage },
  { path: 'risk', title: 'Risk register', render: riskPage },
  { path: 'reconcile', title: 'Reconciliation', render: reconcilePage },
  { path: 'tailers', title: 'Tailer health', render: tailersPage },
];

const root = document.getElementById('app') as HTMLElement;
let notice = '';

function signIn(): void {
  const input = h('input', { name: 'token', type: 'password', autocomplete: 'off', placeholder: 'API token', required: true });
  const form = h(
    'form',
    {
      class: 'signin',
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        session.set(input.value.trim());
        notice = '';
        if (!location.hash.startsWith('#/')) location.hash = '#/grants';
        else void route();
      },
    },
    h('h1', {}, 'lockaudit console'),
    h('p', {}, 'Sign in with an API token (from ', h('code', {}, 'lockaudit token create'), '). It is kept in this tab only.'),
    notice && h('p', { class: 'error' }, notice),
    input,
    h('button', { type: 'submit' }, 'Sign in'),
  );
  root.replaceChildren(form);
  input.focus();
}

/** Renders the page the hash names. A newer navigation wins over a slower older one. */
let generation = 0;
async function route(): Promise<void> {
  if (!session.get()) return signIn();
  const [pathPart, query = ''] = location.hash.replace(/^#\/?/, '').split('?', 2);
  const page = pages.find((p) => p.path === pathPart) ?? pages[0]!;
  const mine = ++generation;
  const main = h('main', {}, h('p', { class: 'loading' }, 'Loading…'));
  const nav = h(
    'nav',
    {},
    h('strong', {}, 'lockaudit'),
    pages.map((p) => h('a', { href: `#/${p.path}`, class: p === page ? 'active' : null }, p.title)),
    h('button', { class: 'signout', onclick: () => { session.clear(); signIn(); } }, 'Sign out'),
  );
  root.replaceChildren(nav, main);
  document.title = `${page.title} · lockaudit`;
  try {
    const content = await page.render(new URLSearchParams(query));
    if (mine === generation) main.replaceChildren(h('h1', {}, page.title), content);
  } catch (err) {
    if (mine !== generation) return;
    if (err instanceof ApiError && err.status === 401) return; // SIGNED_OUT shows the sign-in form
    main.replaceChildren(h('h1', {}, page.title), errorBox(err));
  }
}

window.addEventListener(SIGNED_OUT, (ev) => {
  notice = `Signed out: ${(ev as CustomEvent<string>).detail}`;
  signIn();
});
window.addEventListener('hashchange', () => void route());
void route();
