// The console shell: sign-in, navigation and a hash router (#/page?query), so
// the server serves one index.html and every view is a bookmarkable URL.
import './style.css';
import { ApiError, SIGNED_OUT, getJson, session } from './api.js';
import { h } from './dom.js';
import { errorBox } from './nav.js';
import { contentionPage } from './pages/contention.js';
import { grantsPage } from './pages/grants.js';
import { keyspacePage } from './pages/keyspace.js';
import { reconcilePage } from './pages/reconcile.js';
import { riskPage } from './pages/risk.js';
import { tailersPage } from './pages/tailers.js';
import { timelinePage } from './pages/timeline.js';

import type { Page } from './nav.js';
import type { Role, Whoami } from './types.js';
import { caller, callerHas, setCaller } from './caller.js';

// Each page with the roles that may read what it shows (the API's own rules; admin reads everything), and
// whether its routes serve a token scoped to namespaces or clusters (the API refuses the others for one).
const pages: { path: string; title: string; render: Page; roles: Role[]; scoped?: boolean }[] = [
  { path: 'grants', title: 'Grants', render: grantsPage, roles: ['investigator'], scoped: true },
  { path: 'timeline', title: 'Key timeline', render: timelinePage, roles: ['investigator'], scoped: true },
  { path: 'contention', title: 'Contention', render: contentionPage, roles: ['investigator'], scoped: true },
  { path: 'risk', title: 'Risk register', render: riskPage, roles: ['auditor'], scoped: true },
  { path: 'reconcile', title: 'Reconciliation', render: reconcilePage, roles: ['lock-operator', 'investigator'], scoped: true },
  { path: 'tailers', title: 'Tailer health', render: tailersPage, roles: ['investigator', 'auditor'], scoped: true },
  { path: 'keyspace', title: 'Keyspace at a moment', render: keyspacePage, roles: ['investigator', 'auditor'], scoped: true },
];

const allowed = (page: { roles: Role[]; scoped?: boolean }): boolean => callerHas(...page.roles) && (page.scoped === true || !caller()?.scope);

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
        setCaller(null);
        notice = '';
        // Without a page in the URL, route() opens the first page the token's roles can read.
        void route();
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
  const mine = ++generation;
  // Who the token is: asked once per sign-in.
  if (!caller()) {
    try {
      setCaller(await getJson<Whoami>('/v1/whoami'));
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return; // SIGNED_OUT shows the sign-in form
      root.replaceChildren(errorBox(err));
      return;
    }
    if (mine !== generation) return;
  }
  const who = caller() as Whoami;
  const visible = pages.filter((p) => allowed(p));
  const [pathPart, query = ''] = location.hash.replace(/^#\/?/, '').split('?', 2);
  const page = pages.find((p) => p.path === pathPart) ?? visible[0] ?? pages[0]!;
  const main = h('main', {}, h('p', { class: 'loading' }, 'Loading…'));
  const nav = h(
    'nav',
    {},
    h('strong', {}, 'lockaudit'),
    visible.map((p) => h('a', { href: `#/${p.path}`, class: p === page ? 'active' : null }, p.title)),
    h('span', { class: 'whoami', title: `roles: ${who.roles.join(', ')}` }, who.identity),
    h(
      'button',
      {
        class: 'signout',
        onclick: () => {
          session.clear();
          setCaller(null);
          signIn();
        },
      },
      'Sign out',
    ),
  );
  root.replaceChildren(nav, main);
  document.title = `${page.title} · lockaudit`;
  if (!allowed(page)) {
    // Asking would only earn a 403: say why instead.
    main.replaceChildren(
      h('h1', {}, page.title),
      h(
        'p',
        { class: 'error', role: 'alert' },
        callerHas(...page.roles)
          ? `This page does not serve tokens scoped to namespaces or clusters; the token of ${who.identity} is scoped.`
          : `This page needs one of the roles ${page.roles.join(', ')}; the token of ${who.identity} has ${who.roles.join(', ')}.`,
      ),
    );
    return;
  }
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
  setCaller(null);
  notice = `Signed out: ${(ev as CustomEvent<string>).detail}`;
  signIn();
});
window.addEventListener('hashchange', () => void route());
void route();
