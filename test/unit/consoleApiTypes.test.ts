// The console's response types (ui/src/apiSchema.ts) are generated from the
// OpenAPI document the API serves; the committed file must be current.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { END_KINDS } from '../../core/events.js';
import { CONSOLE_API_TYPES, consoleApiTypes } from '../../scripts/consoleApiTypes.js';

describe('console API types', () => {
  it('ui/src/apiSchema.ts is what the served OpenAPI document generates (run npm run gen:ui-types)', { timeout: 60_000 }, async () => {
    const fresh = await consoleApiTypes();
    assert.ok(readFileSync(CONSOLE_API_TYPES, 'utf8') === fresh, 'ui/src/apiSchema.ts is stale: run npm run gen:ui-types and commit it');
  });

  it('carries how a grant ended as the one list of end kinds, not a string', () => {
    const text = readFileSync(CONSOLE_API_TYPES, 'utf8');
    assert.ok(text.includes(`endKind: (${END_KINDS.map((k) => `"${k}"`).join(' | ')})`), 'endKind is the END_KINDS union');
  });
});
