// The public API, with the signed-in token. The token lives in sessionStorage:
// it is gone when the tab closes and never reaches a cookie the server reads.
const TOKEN_KEY = 'lockaudit.token';

export const session = {
  get: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (token: string): void => sessionStorage.setItem(TOKEN_KEY, token),
  clear: (): void => sessionStorage.removeItem(TOKEN_KEY),
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Fired when the API refuses the token, so the shell shows the sign-in form again. */
export const SIGNED_OUT = 'lockaudit:signed-out';

async function request(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const token = session.get();
  if (token) headers.set('authorization', `Bearer ${token}`);
  const res = await fetch(path, { ...init, headers });
  if (res.ok) return res;
  let code = 'HTTP_' + res.status;
  let message = res.statusText;
  try {
    const body = (await res.json()) as { error?: string; message?: string };
    code = body.error ?? code;
    message = body.message ?? message;
  } catch {
    // Not JSON (a proxy's page, say): the status says enough.
  }
  if (res.status === 401) {
    session.clear();
    window.dispatchEvent(new CustomEvent(SIGNED_OUT, { detail: message }));
  }
  throw new ApiError(res.status, code, message);
}

export async function getJson<T>(path: string, params?: URLSearchParams): Promise<T> {
  const res = await request(params && [...params].length ? `${path}?${params}` : path);
  return (await res.json()) as T;
}

export async function postJson<T>(path: string, body: unknown): Promise<T> {
  const res = await request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return (await res.json()) as T;
}

/**
 * Downloads a text response as a file. A plain link cannot carry the Bearer
 * header, so the response is fetched and handed to the browser as a blob.
 */
export async function download(path: string, params: URLSearchParams, filename: string): Promise<void> {
  const res = await request(`${path}?${params}`);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
