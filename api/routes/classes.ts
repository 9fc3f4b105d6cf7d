// GET /v1/classes (any role): every class with its proof state; GET /v1/classes/:name (any role): the class, and whether the lock API wrote it (proof); PUT /v1/classes/:name
// (admin): writes it proven — also how a class put by hand or written before proofs is made the API's again.
import Type from 'typebox';
import { ROLES } from '../../core/apiTokens.js';
import { LockauditError } from '../../core/errors.js';
import { LockClassSchema, type LockClass } from '../../core/keyspace.js';
import type { LockService } from '../../lock/service.js';
import type { RoutePlugin } from '../types.js';
import { guard } from './lockSchemas.js';

const ClassParams = Type.Object({ name: LockClassSchema.properties.name }, { additionalProperties: false });
// The body is the class; its name comes from the path (and may be repeated in the body).
const ClassBody = Type.Object({ ...LockClassSchema.properties, name: Type.Optional(LockClassSchema.properties.name) }, { additionalProperties: false });

export function classRoutes(lock: LockService): RoutePlugin {
  return function classRoutes(app) {
    app.get(
      '/v1/classes',
      {
        schema: { tags: ['classes'], summary: 'Every lock class, each with whether the lock API wrote it (proof); unproven ones are never granted under' },
        preValidation: guard(...ROLES),
      },
      async () => ({
        classes: (await lock.listClasses()).map((c) => ({
          name: c.name,
          class: c.entry?.value ?? null,
          revision: c.modRevision,
          proof: c.entry?.proof ?? 'unproven',
        })),
      }),
    );

    app.get(
      '/v1/classes/:name',
      { schema: { tags: ['classes'], summary: 'A lock class', params: ClassParams }, preValidation: guard(...ROLES) },
      async (request) => {
        const cls = await lock.getClass(request.params.name);
        // proof: 'unproven' — etcd holds a class the lock API did not write (nothing is granted under it).
        return { class: cls.value, revision: cls.modRevision, proof: cls.proof };
      },
    );

    app.put(
      '/v1/classes/:name',
      {
        schema: {
          tags: ['classes'],
          summary: 'Create or replace a lock class; a rejected class names every broken rule',
          params: ClassParams,
          body: ClassBody,
        },
        preValidation: guard('admin'),
      },
      async (request) => {
        const { name } = request.params;
        if (request.body.name !== undefined && request.body.name !== name) {
          throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', `body.name: "${request.body.name}" differs from the path's "${name}"`, {
            details: [`body.name: differs from the path's "${name}"`],
          });
        }
        const value: LockClass = { ...request.body, name } as LockClass;
        const cls = await lock.putClass(value);
        return { class: cls.value, revision: cls.modRevision, proof: cls.proof };
      },
    );
  };
}
