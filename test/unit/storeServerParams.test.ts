// The store process's reading of HTTP query parameters (platform/storeServer.ts): the text @clickhouse/client
// writes, turned into what chdb's binder takes. The conformance test runs them end to end; here the edges.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseArrayText, unescapeParam } from '../../platform/storeServer.js';

describe('store server parameters', () => {
  it('unescapes a string parameter as the HTTP interface does', () => {
    assert.equal(unescapeParam("it\\'s \\\\ a\\ttab\\nline"), "it's \\ a\ttab\nline");
  });
  it('reads array text: quoted strings with escapes, bare values, NULL, nested arrays, empty', () => {
    assert.deepEqual(parseArrayText("['x','y\\'z','',NULL]"), ['x', "y'z", '', null]);
    assert.deepEqual(parseArrayText('[1, 18446744073709551615]'), ['1', '18446744073709551615']);
    assert.deepEqual(parseArrayText("[['a'],[]]"), [['a'], []]);
    assert.deepEqual(parseArrayText('[]'), []);
  });
  it("refuses what is no array text, with ClickHouse's own code", () => {
    for (const bad of ["['a'", "['a' 'b']", 'x', "['a'] tail", '[,]'])
      assert.throws(
        () => parseArrayText(bad),
        (err: { clickhouseCode?: number }) => err.clickhouseCode === 130,
        bad,
      );
  });
});
