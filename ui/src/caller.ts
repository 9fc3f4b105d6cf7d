// The signed-in caller, for pages that offer actions only some roles may take
// (the API checks again; this only spares the user a button that would fail).
import type { Whoami } from './types.js';

let caller: Whoami | null = null;

export function setCaller(who: Whoami | null): void {
  caller = who;
}

/** Whether the signed-in token holds one of `roles` (admin holds every role). */
export function callerHas(...roles: string[]): boolean {
  return caller !== null && (caller.roles.includes('admin') || roles.some((r) => caller?.roles.includes(r)));
}
