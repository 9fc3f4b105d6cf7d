// The signed-in caller, for pages that offer actions only some roles may take
// (the API checks again; this only spares the user a button that would fail).
import type { Role, Whoami } from './types.js';

let current: Whoami | null = null;

/** Who the signed-in token is; null until asked after a sign-in. */
export function caller(): Whoami | null {
  return current;
}

export function setCaller(who: Whoami | null): void {
  current = who;
}

/** Whether the signed-in token holds one of `roles` (admin holds every role). */
export function callerHas(...roles: Role[]): boolean {
  return current !== null && (current.roles.includes('admin') || roles.some((r) => current?.roles.includes(r)));
}
