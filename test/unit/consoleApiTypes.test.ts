// The console's response types (ui/src/apiSchema.ts) are generated from the
// OpenAPI document the API serves; the committed file must be current.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { END_KINDS } from '../../core/events.js';
import { CONSOLE_API_TYPES, consoleApiTypes, consoleOpenApi } from '../../scripts/consoleApiTypes.js';

describe('console API types', () => {
  it('ui/src/apiSchema.ts is what the served OpenAPI document generates (run npm run gen:ui-types)', { timeout: 60_000 }, async () => {
    const fresh = await consoleApiTypes();
    assert.ok(readFileSync(CONSOLE_API_TYPES, 'utf8') === fresh, 'ui/src/apiSchema.ts is stale: run npm run gen:ui-types and commit it');
  });

  it('carries how a grant ended as the one list of end kinds, not a string', () => {
    const text = readFileSync(CONSOLE_API_TYPES, 'utf8');
    assert.ok(text.includes(`endKind: (${END_KINDS.map((k) => `"${k}"`).join(' | ')})`), 'endKind is the END_KINDS union');
  });

  it('documents every error answer with the one error response schema', { timeout: 60_000 }, async () => {
    const doc = (await consoleOpenApi()) as unknown as {
      paths: Record<
        string,
        Record<string, { responses?: Record<string, { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> }> }>
      >;
    };
    const shapes = new Set<string>();
    let errors = 0;
    for (const [route, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        for (const [status, response] of Object.entries(op.responses ?? {})) {
          if (!/^[45]/.test(status)) continue; // error answers only (a documented 2XX range is a success)
          const schema = response.content?.['application/json']?.schema;
          assert.ok(schema, `${method} ${route} ${status} has a JSON schema`);
          shapes.add(JSON.stringify(schema.properties));
          errors++;
        }
      }
    }
    assert.ok(errors >= 10, `${errors} error answers documented`);
    assert.equal(shapes.size, 1, [...shapes].join('\n'));
  });
});
