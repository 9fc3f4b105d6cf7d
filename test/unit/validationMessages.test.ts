// The 400 lines a request's validation becomes (api/validation.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Type from 'typebox';
import { describeValidation, validatorCompiler } from '../../api/validation.js';

describe('validation messages', () => {
  it('a union of literals fails as one line naming the allowed values (before: "must be equal to constant" once per literal, and never which)', () => {
    const schema = Type.Object(
      {
        format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('csv'), Type.Literal('arrow')])),
        limit: Type.Optional(Type.Integer({ minimum: 1 })),
      },
      { additionalProperties: false },
    );
    const validate = validatorCompiler({ schema, httpPart: 'querystring', method: 'GET', url: '/x' }) as unknown as ((v: unknown) => boolean) & {
      errors: Parameters<typeof describeValidation>[0];
    };
    assert.equal(validate({ format: 'xml', limit: '0' }), false);
    assert.deepEqual(describeValidation(validate.errors, 'querystring'), [
      'querystring.format: must be one of json, csv, arrow',
      'querystring.limit: must be >= 1',
    ]);
  });
});
