// Schemas and guards shared by the lock routes. Every object rejects unknown
// fields; 64-bit values (tokens, revisions, lease ids) are decimal strings.
import type { preValidationHookHandler } from 'fastify';
import Type from 'typebox';
import type { Role } from '../../core/apiTokens.js';
import { LOCK_NAME_MAX, LOCK_NAME_PATTERN } from '../../core/keyspace.js';
import { LockauditError } from '../../core/errors.js';
import { requireRoles } from '../auth.js';
import type { FastifyRequest } from 'fastify';

export const LockKey = Type.String({ minLength: 3, maxLength: LOCK_NAME_MAX, pattern: LOCK_NAME_PATTERN, description: 'Lock name: <namespace>/<path>' });
export const LeaseId = Type.String({ pattern: '^[1-9][0-9]{0,19}$', maxLength: 20, description: 'Session (etcd lease) id, a decimal string' });
export const DecimalToken = Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$', maxLength: 20, description: 'Fencing token, a decimal string (64-bit)' });
export const RequestId = Type.String({ pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$', description: 'Request id (uuid)' });
export const Reason = Type.String({ minLength: 3, maxLength: 2000, description: 'Why; kept in the audit record' });

export const RequestHash = Type.String({
  pattern: '^[0-9a-f]{64}$',
  description: 'sha256 (hex) of the pending request as the approver was shown it (its requestHash): only that request is carried out',
});
/** The body of an approval: the hash of the request the approver saw. */
export const ApproveBody = Type.Object({ requestHash: RequestHash }, { additionalProperties: false });
/** The body of a rejection or cancellation. */
export const WithdrawBody = Type.Object(
  { reason: Type.String({ minLength: 3, maxLength: 2000, description: 'Why; kept in the API log' }) },
  { additionalProperties: false },
);

export const SessionParams = Type.Object({ id: LeaseId }, { additionalProperties: false });
export const IdParams = Type.Object({ id: RequestId }, { additionalProperties: false });

/**
 * Auth before validation, so an unauthenticated caller learns nothing from
 * the validator about the route's input or resources.
 */
export function guard(...roles: Role[]): preValidationHookHandler {
  return requireRoles(...roles) as unknown as preValidationHookHandler;
}

/** The caller's identity; the guard has already required one. */
export function callerOf(request: FastifyRequest): string {
  if (!request.identity) throw new LockauditError('LOCKAUDIT_ERR_AUTH_REQUIRED', 'a valid API token is required (Authorization: Bearer <token>)');
  return request.identity.identity;
}
