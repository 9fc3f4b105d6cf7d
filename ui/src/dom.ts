// A tiny DOM builder: the console is a handful of tables and forms, so a
// framework would add more than it saves.
export type Child = Node | string | number | null | undefined | false | Child[];
type AttrValue = string | number | boolean | null | undefined | ((ev: Event) => void);
export type Attrs = Record<string, AttrValue>;

function apply(el: Element, attrs: Attrs): void {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.slice(2).toLowerCase(), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
}

function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
}

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

/** A table from column headers and rows of cells. */
export function table(headers: string[], rows: Child[][], attrs: Attrs = {}): HTMLTableElement {
  return h(
    'table',
    attrs,
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((x) => h('th', {}, x)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((r) =>
        h(
          'tr',
          {},
          r.map((c) => h('td', {}, c)),
        ),
      ),
    ),
  );
}

/** A labelled text input of a filter form. */
export function field(name: string, label: string, value: string | null, placeholder = ''): HTMLLabelElement {
  return h('label', {}, label, h('input', { name, value: value ?? '', placeholder }));
}

/** Non-empty form fields as query parameters. */
export function formParams(form: HTMLFormElement): URLSearchParams {
  const out = new URLSearchParams();
  for (const [k, v] of new FormData(form)) if (typeof v === 'string' && v.trim() !== '') out.set(k, v.trim());
  return out;
}

export const fmtTime = (iso: string | null): string => (iso ? iso.replace('T', ' ').replace('Z', '') : '—');
export const fmtMs = (ms: number | null | undefined): string =>
  ms === null || ms === undefined ? '—' : ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`;
