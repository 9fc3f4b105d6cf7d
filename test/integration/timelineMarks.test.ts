// What a restore writes once its divergence is decided (tailer/recovery/restores.ts,
// sql/065), against the real audit store: nothing is deleted or moved; rows
// above the divergence stay with every column, marked rolled back; grants held
// at the divergence are carried into the new timeline; the new timeline's rows
// at reused revisions are rows of their own, not replacements; a second run
// changes nothing (a restore recorded half-way is redone).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { grantHistory } from '../../reports/grantHistory/index.js';
import { stateAt } from '../../reports/state/index.js';
import { writeRows } from '../../tailer/sink/rowWriter.js';
import { endHistory, rollBack } from '../../tailer/recovery/restores.js';
import { testConfig, uniqueId } from '../support/env.js';
import { fileStore } from '../support/fileStore.js';

const db = fileStore();
const BASE_MS = Date.UTC(2026, 0, 1); // a grant's rows agree on granted_at (grants_by_holder's key holds it)

interface GrantState {
  key: string;
  timeline: number;
  end_kind: string;
  rolled_back_by: number;
  superseded_by: number;
}

function event(cluster: string, revision: number, key: string, value: string): Record<string, unknown> {
  return {
    cluster,
    revision: String(revision),
    key,
    event_type: 'grant',
    op: 'put',
    holder: 'h',
    value,
    prev_value: '',
    wall_time: BASE_MS + revision,
    lease: '1',
    session: '1',
    grant_revision: String(revision),
    mod_revision: String(revision),
    create_revision: String(revision),
    version: '1',
  };
}

function grant(cluster: string, key: string, revision: number, end?: number): Record<string, unknown> {
  return {
    cluster,
    key,
    namespace: 'ns',
    lock_path: key,
    class: 'c',
    holder: 'h',
    session: '1',
    token: String(revision),
    epoch: 0,
    grant_revision: String(revision),
    granted_at: BASE_MS + revision,
    wait_ms: '0',
    end_kind: end === undefined ? '' : 'release',
    end_revision: String(end ?? 0),
    ended_at: end === undefined ? null : BASE_MS + end,
    duration_ms: end === undefined ? null : 1,
    unprotected: 0,
    start_known: 1,
    row_version: String(end ?? 0),
  };
}

async function grants(cluster: string): Promise<GrantState[]> {
  return db.store.rows<GrantState>(
    'SELECT key, timeline, end_kind, rolled_back_by, superseded_by FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} ORDER BY key, timeline',
    { c: cluster },
  );
}

describe('a restore marks, never deletes or moves', () => {
  // Default pages, and pages of one row: the marks run one statement per page (restores.ts), with the same result.
  for (const pageSize of [undefined, 1])
    it(`rolled back rows stay whole and marked; held grants are carried; the new timeline does not replace the old (pages: ${pageSize ?? 'default'})`, async () => {
      const c = uniqueId('tm');
      // Timeline 0: a grant ended below the divergence (4), one still held, one whose end (6) is rolled back, one granted after it.
      const events = [
        event(c, 1, '/l/ns/k1', 'v1'),
        event(c, 2, '/l/ns/k2', 'v2'),
        event(c, 3, '/l/ns/k3', 'v3'),
        event(c, 5, '/l/ns/k5', 'v5'),
        event(c, 6, '/l/ns/k3', 'v6'),
      ];
      await writeRows(db.store, {
        events: events as never,
        grants: [grant(c, 'ns/k1', 1, 2), grant(c, 'ns/k2', 2), grant(c, 'ns/k3', 3), grant(c, 'ns/k3', 3, 6), grant(c, 'ns/k5', 5)] as never,
        quarantine: [],
      });
      const [before] = await db.store.rows<{ n: string }>('SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String}', { c });

      await rollBack(db.store, c, 4n, 1, 1, 7n, pageSize);
      await rollBack(db.store, c, 4n, 1, 1, 7n, pageSize); // redone: changes nothing
      const ev = await db.store.rows<{ revision: string; value: string; timeline: number; rolled_back_by: number; superseded_by: number }>(
        'SELECT toString(revision) AS revision, value, timeline, rolled_back_by, superseded_by FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} ORDER BY revision',
        { c },
      );
      assert.equal(String(ev.length), before?.n, 'no event deleted or moved');
      assert.deepEqual(
        ev.map((e) => [e.revision, e.value, e.rolled_back_by, e.superseded_by]),
        [
          ['1', 'v1', 0, 0],
          ['2', 'v2', 0, 0],
          ['3', 'v3', 0, 0],
          ['5', 'v5', 1, 1],
          ['6', 'v6', 1, 1],
        ],
      );
      assert.deepEqual(await grants(c), [
        { key: 'ns/k1', timeline: 0, end_kind: 'release', rolled_back_by: 0, superseded_by: 0 }, // shared history, untouched
        { key: 'ns/k2', timeline: 0, end_kind: '', rolled_back_by: 0, superseded_by: 1 }, // held at 4: carried...
        { key: 'ns/k2', timeline: 1, end_kind: '', rolled_back_by: 0, superseded_by: 0 }, // ...into timeline 1
        { key: 'ns/k3', timeline: 0, end_kind: 'release', rolled_back_by: 0, superseded_by: 1 }, // its end was rolled back: held again...
        { key: 'ns/k3', timeline: 1, end_kind: '', rolled_back_by: 0, superseded_by: 0 }, // ...in timeline 1
        { key: 'ns/k5', timeline: 0, end_kind: '', rolled_back_by: 1, superseded_by: 1 }, // granted after 4: rolled back, kept
      ]);

      // Timeline 1 reuses revision 5 (another key) and 6 (k2's release), and ends k3 at 7.
      await writeRows(
        db.store,
        {
          events: [event(c, 5, '/l/ns/k9', 'w5'), event(c, 6, '/l/ns/k2', 'w6')] as never,
          grants: [grant(c, 'ns/k2', 2, 6), grant(c, 'ns/k3', 3, 7)] as never,
          quarantine: [],
        },
        { timeline: 1 },
      );
      // Finished again (an insider removed its timeline record and the proof it was finished, so the guard lets it
      // run): a restore of generation 1 marks only rows captured before it, never timeline 1's own (before: w5, w6).
      await rollBack(db.store, c, 4n, 1, 1, 8n, pageSize);
      const current = await db.store.rows<{ revision: string; value: string }>(
        'SELECT toString(revision) AS revision, value FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND superseded_by = 0 ORDER BY revision',
        { c },
      );
      assert.deepEqual(
        current.map((e) => [e.revision, e.value]),
        [
          ['1', 'v1'],
          ['2', 'v2'],
          ['3', 'v3'],
          ['5', 'w5'],
          ['6', 'w6'],
        ],
      );
      const [all] = await db.store.rows<{ n: string }>('SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String}', { c });
      assert.equal(all?.n, '7', 'timeline 0 rows at revisions 5 and 6 are still there beside timeline 1 rows');
      const g = await grants(c);
      assert.deepEqual(
        g.filter((r) => r.superseded_by === 0).map((r) => [r.key, r.timeline, r.end_kind]),
        [
          ['ns/k1', 0, 'release'],
          ['ns/k2', 1, 'release'],
          ['ns/k3', 1, 'release'],
        ],
      );
      const history = await db.store.rows<{ n: string }>(
        'SELECT count() AS n FROM {db:Identifier}.grants_by_holder FINAL WHERE cluster = {c:String} AND (superseded_by = 0 OR rolled_back_by > 0)',
        { c },
      );
      assert.equal(history[0]?.n, '4', "every timeline's grants, each once (grants_by_holder too)");

      // Grant history: every timeline's grants, each once, each with its timeline and whether it was rolled back.
      const deps = { store: db.store, limits: testConfig().reports, clusters: [c] };
      const page = await grantHistory(
        { ...deps, cursorKey: randomBytes(32) },
        { namespace: 'ns', order: 'asc', from: new Date(BASE_MS - 1).toISOString(), to: new Date(BASE_MS + 100).toISOString() },
        BASE_MS + 1000,
      );
      // (Only this run's cluster: each page size's run writes the same namespace.)
      assert.deepEqual(
        page.items.filter((g) => g.cluster === c).map((g) => [g.key, g.timeline, g.rolledBack, g.endKind]),
        [
          ['ns/k1', 0, false, 'release'],
          ['ns/k2', 1, false, 'release'],
          ['ns/k3', 1, false, 'release'],
          ['ns/k5', 0, true, null],
        ],
      );

      // Revision-based views read one timeline: the current one by default, an earlier one on request.
      await db.store.insert('etcd_timelines', [
        {
          cluster: c,
          generation: 0,
          cluster_id: '1',
          previous_cluster_id: '',
          previous_checkpoint: '0',
          restored_head: '0',
          diverged_after: '0',
          resume_revision: '0',
          reason: 'first start',
          detected_at: BASE_MS,
        },
        {
          cluster: c,
          generation: 1,
          timeline: 1,
          cluster_id: '1',
          previous_cluster_id: '1',
          previous_checkpoint: '6',
          restored_head: '4',
          diverged_after: '4',
          resume_revision: '4',
          reason: 'test restore',
        },
      ]);
      await db.store.insert('checkpoints', [{ cluster: c, revision: '6', leader: 't' }]);
      const holdsAt = async (timeline?: number): Promise<string[]> => {
        const s = await stateAt(deps, { at: '6', ...(timeline === undefined ? {} : { timeline }) });
        assert.equal(s.at.timeline, timeline ?? 1);
        return s.holds.map((h) => `${h.key}@${h.grantRevision}`);
      };
      assert.deepEqual(await holdsAt(), ['ns/k1@1', 'ns/k2@6', 'ns/k3@3', 'ns/k9@5'], 'timeline 1 (current): its own revisions 5 and 6 and what it shares');
      assert.deepEqual(await holdsAt(1), await holdsAt());
      assert.deepEqual(await holdsAt(0), ['ns/k1@1', 'ns/k2@2', 'ns/k3@6', 'ns/k5@5'], 'timeline 0: as it was before the restore');
      await assert.rejects(stateAt(deps, { at: '6', timeline: 2 }), /querystring.timeline/);
    });

  it('quarantine keeps one row per timeline at a reused revision, rejected rows included', async () => {
    const c = uniqueId('tq');
    const bad = (): Record<string, unknown> => ({ ...event(c, 7, '/l/ns/q', 'v'), token: 'not a number' }); // rejected before the insert: quarantined
    await writeRows(db.store, { events: [bad()] as never, grants: [], quarantine: [] });
    const { quarantined } = await writeRows(db.store, { events: [bad()] as never, grants: [], quarantine: [] }, { timeline: 1 });
    assert.equal(quarantined.length, 1);
    const rows = await db.store.rows<{ timeline: number }>(
      'SELECT timeline FROM {db:Identifier}.quarantine FINAL WHERE cluster = {c:String} ORDER BY timeline',
      { c },
    );
    assert.deepEqual(
      rows.map((r) => Number(r.timeline)),
      [0, 1],
    );
  });

  for (const pageSize of [undefined, 1])
    it(`a new history supersedes the captured events without rolling anything back, and leaves the grants (pages: ${pageSize ?? 'default'})`, async () => {
      const c = uniqueId('tn');
      await writeRows(db.store, {
        events: [event(c, 1, '/l/ns/a', 'v1'), event(c, 2, '/l/ns/b', 'v2')] as never,
        grants: [grant(c, 'ns/a', 1, 3), grant(c, 'ns/b', 2)] as never,
        quarantine: [],
      });
      await endHistory(db.store, c, 1, 7n, pageSize);
      const ev = await db.store.rows<{ rolled_back_by: number; superseded_by: number }>(
        'SELECT rolled_back_by, superseded_by FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} ORDER BY revision',
        { c },
      );
      assert.deepEqual(ev, [
        { rolled_back_by: 0, superseded_by: 1 },
        { rolled_back_by: 0, superseded_by: 1 },
      ]);
      assert.deepEqual(
        (await grants(c)).map((r) => [r.key, r.rolled_back_by, r.superseded_by]),
        [
          ['ns/a', 0, 0],
          ['ns/b', 0, 0],
        ],
      );
    });
});
