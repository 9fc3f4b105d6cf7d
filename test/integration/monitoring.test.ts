// What deploy/ ships for operators, checked with the tools they run:
// `promtool check rules` and `promtool test rules` on deploy/prometheus (every
// alert has a unit test there, and a broken threshold fails them); the Grafana
// dashboard is importable JSON whose every PromQL expression parses (as
// recording rules under promtool); and every metric a rule or panel names is
// in the /metrics of a running `lockaudit start`. promtool is built by the
// same code as `lockaudit services install` (services/install.ts).
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { projectRoot } from '../../core/paths.js';
import { ensurePromtool } from '../../services/install.js';
import { tempDir } from '../support/env.js';

const run = promisify(execFile);
const rulesDir = path.join(projectRoot, 'deploy', 'prometheus');
const rulesFile = path.join(rulesDir, 'lockaudit.rules.yml');
const rulesTestFile = path.join(rulesDir, 'lockaudit.rules.test.yml');
const dashboardFile = path.join(projectRoot, 'deploy', 'grafana', 'lockaudit.json');

interface Rule {
  record?: string;
  alert?: string;
  expr: string;
}
const rules = (parse(readFileSync(rulesFile, 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> }).groups.flatMap((g) => g.rules);

interface Target {
  refId: string;
  expr: string;
  datasource?: { uid?: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
}
interface Dashboard {
  uid: string;
  title: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query?: unknown }> };
}
const dashboard = JSON.parse(readFileSync(dashboardFile, 'utf8')) as Dashboard;
const dashboardTargets = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p, target: t })));

/** Grafana's variables replaced by what Prometheus would receive. */
const asPromql = (expr: string): string =>
  expr
    .replaceAll('$__rate_interval', '5m')
    .replaceAll('$__range', '1h')
    .replace(/\$\{?(cluster|namespace)\}?/g, '.*');

/** The metric names an expression reads (recording rules, named lockaudit:…, are not metrics). */
const metricNames = (expr: string): string[] => [...expr.matchAll(/(?<![\w:])lockaudit_[a-zA-Z0-9_]+/g)].map((m) => m[0]);

async function promtool(bin: string, args: string[], cwd = rulesDir): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(bin, args, { cwd, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, out: (e.stdout ?? '') + (e.stderr ?? '') };
  }
}

describe('deploy/: Prometheus rules and the Grafana dashboard', { timeout: 3_600_000 }, () => {
  let bin = '';
  const tmp = tempDir('lockaudit-monitoring-');
  before(async () => {
    // First time on a machine: go install (minutes). Says so, like services install.
    bin = await ensurePromtool((m) => process.stderr.write(`${m}\n`));
  });
  after(() => tmp.remove());

  it('promtool check rules: the rules file is valid', async () => {
    const r = await promtool(bin, ['check', 'rules', rulesFile]);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, new RegExp(`SUCCESS: ${rules.length} rules found`));
  });

  it('promtool test rules: every alert fires on its synthetic series and stays quiet where it should', async () => {
    const r = await promtool(bin, ['test', 'rules', rulesTestFile]);
    assert.equal(r.code, 0, r.out);
    const tests = parse(readFileSync(rulesTestFile, 'utf8')) as { tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }> }> };
    const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const a of rules.filter((x) => x.alert)) {
      assert.ok(
        cases.some((c) => c.alertname === a.alert && (c.exp_alerts?.length ?? 0) > 0),
        `${a.alert} has a test where it fires`,
      );
      assert.ok(
        cases.some((c) => c.alertname === a.alert && (c.exp_alerts?.length ?? 0) === 0),
        `${a.alert} has a test where it does not fire`,
      );
    }
  });

  it('the rule tests can fail: a changed threshold breaks them', async () => {
    const text = readFileSync(rulesFile, 'utf8');
    assert.ok(text.includes('lockaudit:tailer_lag_ratio >= 0.5'));
    writeFileSync(path.join(tmp.dir, 'lockaudit.rules.yml'), text.replace('lockaudit:tailer_lag_ratio >= 0.5', 'lockaudit:tailer_lag_ratio >= 0.7'));
    copyFileSync(rulesTestFile, path.join(tmp.dir, 'lockaudit.rules.test.yml'));
    const r = await promtool(bin, ['test', 'rules', 'lockaudit.rules.test.yml'], tmp.dir);
    assert.notEqual(r.code, 0);
    assert.match(r.out, /LockauditTailerLagHigh/);
  });

  it('the dashboard is importable Grafana JSON: uid, title, schema version, panels on the 24-column grid, unique ids and refIds, datasource and variables defined', () => {
    assert.match(dashboard.uid, /^[a-zA-Z0-9_-]{1,40}$/);
    assert.ok(dashboard.title.length > 0);
    assert.ok(Number.isInteger(dashboard.schemaVersion) && dashboard.schemaVersion >= 30);
    const ids = dashboard.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    const variables = new Set(dashboard.templating.list.map((v) => v.name));
    assert.ok(dashboard.templating.list.some((v) => v.type === 'datasource' && v.name === 'datasource'));
    for (const p of dashboard.panels) {
      assert.ok(Number.isInteger(p.id) && p.title.length > 0, `panel ${p.id}`);
      const g = p.gridPos;
      assert.ok(g.x >= 0 && g.w > 0 && g.x + g.w <= 24 && g.h > 0 && g.y >= 0, `panel ${p.id} fits the grid`);
      if (p.type === 'row') continue;
      assert.ok(['timeseries', 'stat'].includes(p.type), `panel ${p.id}: a core panel type`);
      assert.equal(p.datasource?.uid, '${datasource}');
      const targets = p.targets ?? [];
      assert.ok(targets.length > 0, `panel ${p.id} has queries`);
      assert.equal(new Set(targets.map((t) => t.refId)).size, targets.length, `panel ${p.id}: refIds unique`);
      for (const t of targets) {
        for (const m of t.expr.matchAll(/\$\{?([a-zA-Z_]\w*)/g))
          if (!m[1]?.startsWith('__')) assert.ok(variables.has(m[1] ?? ''), `panel ${p.id}: $${m[1]} is a dashboard variable`);
      }
    }
    const titles = dashboard.panels.filter((p) => p.type === 'row').map((p) => p.title);
    assert.deepEqual(titles, ['Capture (tailer)', 'Lock API', 'Reports and API', 'Exports and alerts']);
  });

  it('every dashboard expression parses (promtool check rules on them as recording rules)', async () => {
    const file = path.join(tmp.dir, 'dashboard.rules.yml');
    const records = dashboardTargets.map(
      ({ panel, target }) => `      - record: dashboard:panel_${panel.id}_${target.refId}\n        expr: ${JSON.stringify(asPromql(target.expr))}\n`,
    );
    writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${records.join('')}`);
    const r = await promtool(bin, ['check', 'rules', file]);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, new RegExp(`SUCCESS: ${records.length} rules found`));
    // And the check can fail: one unbalanced bracket is reported.
    writeFileSync(file, `groups:\n  - name: broken\n    rules:\n      - record: x:y\n        expr: "sum(rate(lockaudit_tailer_events_total[5m])"\n`);
    assert.notEqual((await promtool(bin, ['check', 'rules', file])).code, 0);
  });

  describe('a running `lockaudit start --demo`: every metric a rule or panel names is in /metrics; the demo banner', { timeout: 360_000 }, () => {
    const PORT = Number(process.env.LOCKAUDIT_LOCAL_PORT_BASE ?? 24000) + 47;
    const data = tempDir('lockaudit-monitoring-run-');
    // The demo as `npm run demo` runs it: on services of its own (a port block and data dir of its own), not the
    // suite's etcd, whose history other tests filled with hand-written holds and compactions — a demo tailer
    // rightly alarms on those (LOCKAUDIT_ALARM_FOREIGN_WRITE), and this test reads the demo's alarms.
    const env = {
      ...process.env,
      LOCKAUDIT_DATA_DIR: data.dir,
      LOCKAUDIT_LOCAL_PORT_BASE: String(Number(process.env.LOCKAUDIT_LOCAL_PORT_BASE ?? 24000) + 500),
      LOCKAUDIT_PORT: String(PORT),
      LOCKAUDIT_LOG_LEVEL: 'info',
    };
    let child: ChildProcess | undefined;
    let stderr = '';
    let stdout = '';
    before(async () => {
      await run(process.execPath, ['bin/lockaudit.js', 'services', 'up'], { cwd: projectRoot, env, timeout: 120_000 });
    });
    after(async () => {
      if (child && child.exitCode === null) child.kill('SIGKILL');
      // Only what `services up` started for this data dir (its pid files).
      await run(process.execPath, ['bin/lockaudit.js', 'services', 'down'], { cwd: projectRoot, env, timeout: 60_000 }).catch(() => undefined);
      data.remove();
    });

    it('a scrape names them all', async () => {
      child = spawn(process.execPath, ['bin/lockaudit.js', 'start', '--demo', '--demo-workers', '2', '--demo-rate', '2'], {
        cwd: projectRoot,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      const named = new Map<string, string>();
      for (const r of rules) for (const n of metricNames(r.expr)) named.set(n, `rule ${r.alert ?? r.record}`);
      for (const { panel, target } of dashboardTargets) for (const n of metricNames(target.expr)) named.set(n, `panel "${panel.title}"`);
      assert.ok(named.size >= 30, `the rules and panels name ${named.size} metrics`);
      /** What the rules and panels name that a scrape does not expose. */
      const missingFrom = (text: string): string[] => {
        const exposed = new Set<string>();
        for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
          const [, name = '', type] = m;
          exposed.add(name);
          if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) exposed.add(name + s);
        }
        return [...named].filter(([n]) => !exposed.has(n)).map(([n, where]) => `${n} (${where})`);
      };
      // Ready means the API serves; the other role processes report their metrics every 2 s after they start
      // (platform/roleStatus.ts), later on a loaded machine: scrape until all are in, or the deadline.
      const deadline = Date.now() + 120_000;
      let missing: string[] = ['(no scrape)'];
      for (;;) {
        try {
          const ready = await fetch(`http://127.0.0.1:${PORT}/readyz`);
          if (ready.status === 200) {
            missing = missingFrom(await (await fetch(`http://127.0.0.1:${PORT}/metrics`)).text());
            if (missing.length === 0) break;
          }
        } catch {
          // not listening yet
        }
        if (Date.now() >= deadline) break;
        await sleep(500);
      }
      assert.deepEqual(missing, [], `stderr: ${stderr.slice(-1000)}`);
    });

    it('not on a terminal, the log is JSON lines; once ready the demo banner is printed and its three commands answer 200', async () => {
      const deadline = Date.now() + 60_000;
      while (!stderr.includes('lockaudit demo is ready')) {
        assert.ok(Date.now() < deadline, `no banner; stderr: ${stderr.slice(-2000)}`);
        await sleep(500);
      }
      const banner = stderr.slice(stderr.indexOf('lockaudit demo is ready')).split('\n');
      const exportLine = banner.find((l) => l.trim().startsWith('export LOCKAUDIT_TOKEN='))?.trim();
      const curls = banner.filter((l) => l.trim().startsWith('curl ')).map((l) => l.trim());
      assert.ok(exportLine);
      assert.equal(curls.length, 3);
      assert.ok(banner.some((l) => l.includes(`http://127.0.0.1:${PORT}/ui/`)));
      for (const c of curls) {
        const answered: { stdout: string } = await run('sh', ['-c', `${exportLine}; ${c.replace(/\s+#.*$/, '')} -o /dev/null -w '%{http_code}'`], {
          cwd: projectRoot,
        });
        assert.equal(answered.stdout, '200', c);
      }
      const first = stdout.split('\n')[0] ?? '';
      assert.equal((JSON.parse(first) as { app?: string }).app, 'lockaudit', 'JSON lines when stdout is no terminal');
      child?.kill('SIGTERM');
    });
  });
});
