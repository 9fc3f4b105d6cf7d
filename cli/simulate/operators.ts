// Two lock-operators on call: now and then one requests a force-release of
// the longest-held key (with a reason; the answer shows the class's
// enforcement) and the *other* approves it. Sometimes the requester tries to
// approve their own request first, which must be refused.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Rng } from './rng.js';
import type { SimStats } from './stats.js';
import type { Transport } from './transport.js';
import type { HoldBoard } from './worker.js';

export interface Operator {
  identity: string;
  token: string;
}

export async function runOperators(options: {
  operators: [Operator, Operator];
  api: Transport;
  board: HoldBoard;
  rng: Rng;
  stats: SimStats;
  until: number;
  meanGapMs: number;
}): Promise<void> {
  const { api, board, rng, stats, until } = options;
  let turn = 0;
  await sleep(Math.min(5_000, options.meanGapMs));
  while (Date.now() < until) {
    const target = [...board.holds.entries()].filter(([, h]) => Date.now() - h.since > 3_000).sort(([, a], [, b]) => a.since - b.since)[0];
    if (target) {
      const [requester, approver] = turn++ % 2 === 0 ? options.operators : [options.operators[1], options.operators[0]];
      const [key] = target;
      const revokeSession = rng.chance(0.2);
      const req = await api.request('POST', '/v1/force-releases', requester.token, { key, reason: `simulated incident: ${key} held too long`, revokeSession });
      if (req.status === 202) {
        stats.inc(`force-release requests (${String(req.body.enforcement)})`);
        if (rng.chance(0.25)) {
          const self = await api.request('POST', `/v1/force-releases/${String(req.body.id)}/approve`, requester.token, { requestHash: req.body.requestHash });
          stats.inc(self.status === 403 ? 'force-release self-approvals refused (403)' : `force-release self-approval answered ${self.status}`);
        }
        await sleep(rng.int(50, 400)); // the second person takes a moment
        // The approver reads the request and approves what they were shown (its hash), as a person would.
        const shown = await api.request('GET', `/v1/force-releases/${String(req.body.id)}`, approver.token);
        const ok = await api.request('POST', `/v1/force-releases/${String(req.body.id)}/approve`, approver.token, { requestHash: shown.body.requestHash });
        if (ok.status === 200) {
          stats.inc('force-releases approved');
          board.holds.delete(key);
        } else if (ok.body.error === 'LOCKAUDIT_ERR_FORCE_STALE') stats.inc('force-releases refused as stale (409)');
        else stats.inc(`force-release approval failed (${ok.status})`);
      } else if (req.status === 404) {
        board.holds.delete(key);
      } else stats.inc(`force-release request failed (${req.status})`);
    }
    await sleep(Math.min(rng.exp(options.meanGapMs), Math.max(0, until - Date.now())));
  }
}
