// "The last 1 h / 24 h / 7 d / 30 d" buttons of the pages that plot over time.
// The span travels in the page's URL (`span=24 h`), never to the API, which
// gets the from/to it stands for.
import { h } from './dom.js';
import { go } from './nav.js';

export const SPANS: readonly (readonly [string, number])[] = [
  ['1 h', 3_600_000],
  ['24 h', 86_400_000],
  ['7 d', 7 * 86_400_000],
  ['30 d', 30 * 86_400_000],
];

/** The span the page's parameters choose (the fallback when none is named), or null when an explicit from/to wins. */
export function chosenSpan(params: URLSearchParams, fallback = '24 h'): readonly [string, number] | null {
  if (params.has('from') || params.has('to')) return null;
  return SPANS.find(([label]) => label === (params.get('span') ?? fallback)) ?? SPANS.find(([label]) => label === fallback) ?? null;
}

/** The API's query for the page's parameters: the span becomes from/to ending now. */
export function apiQuery(params: URLSearchParams, span: readonly [string, number] | null): URLSearchParams {
  const query = new URLSearchParams([...params].filter(([k]) => k !== 'span'));
  if (span) {
    const now = Date.now();
    query.set('from', new Date(now - span[1]).toISOString());
    query.set('to', new Date(now).toISOString());
  }
  return query;
}

/** Buttons choosing a span for `page`, keeping the page's other parameters (an explicit window is dropped). */
export function spanButtons(page: string, params: URLSearchParams, current: readonly [string, number] | null, label: string): HTMLElement {
  const choose = (span: string) => {
    const next = new URLSearchParams([...params].filter(([k]) => k !== 'from' && k !== 'to'));
    next.set('span', span);
    go(page, next);
  };
  return h(
    'div',
    { class: 'spans' },
    label,
    SPANS.map(([name]) => h('button', { type: 'button', class: name === current?.[0] ? 'active' : null, onclick: () => choose(name) }, name)),
  );
}
