// What pages share with the shell: navigation and how an error is shown.
import { ApiError } from './api.js';
import { h } from './dom.js';

/** A page renders its content from the hash's query parameters. */
export type Page = (params: URLSearchParams) => Promise<Node>;

/** Navigates to a page with parameters; re-renders even when the hash is unchanged (a repeated search). */
export function go(path: string, params: URLSearchParams = new URLSearchParams()): void {
  const hash = `#/${path}${[...params].length ? `?${params}` : ''}`;
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else location.hash = hash;
}

export function errorBox(err: unknown): HTMLElement {
  const text = err instanceof ApiError ? `${err.code}: ${err.message}` : String(err);
  return h('p', { class: 'error', role: 'alert' }, text);
}

/** "Narrowed to this token's scope: …" when a scoped token's answer was narrowed (the API's narrowedTo), else nothing. */
export function narrowedNote(n: { namespaces: string[]; clusters: string[] } | undefined): HTMLElement | null {
  if (!n) return null;
  const parts = [n.namespaces.length ? `namespaces ${n.namespaces.join(', ')}` : '', n.clusters.length ? `clusters ${n.clusters.join(', ')}` : ''];
  return h('p', { class: 'muted narrowed' }, `Narrowed to this token's scope: ${parts.filter(Boolean).join(' and ')}.`);
}
