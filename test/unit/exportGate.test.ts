// ExportGate (exporters/compliance/chunkedExport.ts): the grants check beside an export's other work — whose error an export
// reports, and that it waits for the check before reporting it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ExportGate } from '../../exporters/compliance/chunkedExport.js';

const later = <T>(ms: number, outcome: () => T): Promise<T> =>
  new Promise((resolve, reject) =>
    setTimeout(() => {
      try {
        resolve(outcome());
      } catch (err) {
        reject(err);
      }
    }, ms),
  );

describe('ExportGate', () => {
  it("guard: the work's result when both succeed, after nothing else", async () => {
    const gate = new ExportGate(later(20, () => undefined));
    assert.equal(await gate.guard(Promise.resolve(42)), 42);
    await gate.passed();
  });

  it("guard: a failed check's error wins over the work's, even when the check fails later", async () => {
    const gate = new ExportGate(
      later(30, () => {
        throw new Error('grants disagree');
      }),
    );
    const t0 = performance.now();
    await assert.rejects(gate.guard(Promise.reject(new Error('plan failed'))), /grants disagree/);
    assert.ok(performance.now() - t0 >= 25, 'waited for the check before throwing');
    assert.equal(gate.signal.aborted, true);
  });

  it("guard: the work's error when the check passes, once the check is over", async () => {
    let checked = false;
    const gate = new ExportGate(later(30, () => void (checked = true)));
    await assert.rejects(gate.guard(Promise.reject(new Error('plan failed'))), /plan failed/);
    assert.equal(checked, true, 'no query of the check runs on after the export has thrown');
    assert.equal(gate.signal.aborted, false);
  });

  it('takes a check that failed before anything asked (no unhandled rejection) and reports it on passed()', async () => {
    const gate = new ExportGate(Promise.reject(new Error('grants disagree at once')));
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(gate.signal.aborted, true);
    await assert.rejects(gate.passed(), /grants disagree at once/);
  });
});
