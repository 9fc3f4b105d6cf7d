// Grant history rows/s by format: JSON, CSV and Arrow IPC (format=arrow) over
// the same generated grants, paged through the API (fastify inject → report
// module → ClickHouse) with the cursor, JSON as the same-run baseline. Twice:
// as served (response complete), and served then decoded by the client
// (JSON.parse, CSV split into fields, apache-arrow's tableFromIPC).
// BENCH_FORMATS_EVENTS sets the size (default 1 000 000 events ≈ 200 000
// grants over 30 days), BENCH_FORMATS_PAGE the page size (default 10 000),
// BENCH_FORMATS_ITER the passes per format (best kept; default 3).
// Then compliance exports of the same grants by format (Parquet, CSV, Arrow
// IPC), each streamed into MinIO with its manifest, Parquet as the baseline.
import { tableFromIPC } from 'apache-arrow';
import { buildApp } from '../../api/app.js';
import { grantRoutes } from '../../api/routes/grants.js';
import { ApiTokenVerifier, createApiToken } from '../../core/apiTokens.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { HealthState } from '../../platform/health.js';
import { createS3Client } from '../../core/s3.js';
import { ExportRecords, runComplianceExport } from '../../exporters/compliance/complianceExport.js';
import type { ExportFormat } from '../../exporters/compliance/chunkedExport.js';
import { ensureHistoryBucket } from '../../platform/buckets.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { generateReportData } from './reportsData.js';
import { heading, report } from './report.js';

const EVENTS = Number(process.env.BENCH_FORMATS_EVENTS ?? 1_000_000);
const PAGE = Number(process.env.BENCH_FORMATS_PAGE ?? 10_000);
const ITER = Number(process.env.BENCH_FORMATS_ITER ?? 3);
type Format = 'json' | 'csv' | 'arrow';

function decode(format: Format, body: Buffer): number {
  if (format === 'json') return (JSON.parse(body.toString('utf8')) as { items: unknown[] }).items.length;
  if (format === 'csv')
    return body
      .toString('utf8')
      .split('\r\n')
      .slice(1, -1)
      .map((l) => l.split(',')).length;
  return tableFromIPC(body).numRows;
}

async function main(): Promise<void> {
  const { store, close } = await tempStore();
  const config = testConfig({
    LOCKAUDIT_RATE_LIMIT_PER_MINUTE: '1000000',
    LOCKAUDIT_QUERY_TIMEOUT_MS: '120000',
    LOCKAUDIT_MAX_PAGE_SIZE: '100000',
    LOCKAUDIT_S3_HISTORY_BUCKET: uniqueId('bench-fmt-'),
  });
  const app = await buildApp(
    { config, logger: createLogger('silent'), store, verifier: new ApiTokenVerifier(store), health: new HealthState(), metrics: createMetricsRegistry() },
    [grantRoutes],
  );
  try {
    const endMs = Date.now();
    const data = await generateReportData(store, EVENTS, endMs);
    heading(`grant history by format: ${data.grants.toLocaleString('en-US')} grants (30 days), pages of ${PAGE.toLocaleString('en-US')}, best of ${ITER}`);
    const { token } = await createApiToken(store, 'bench-investigator', ['investigator']);
    const window = `from=${encodeURIComponent(new Date(endMs - 30 * 86_400_000).toISOString())}&to=${encodeURIComponent(new Date(endMs).toISOString())}`;

    /** Every page of the window in one format; rows/s served (and decoded, when asked). */
    async function pass(format: Format, decodeToo: boolean): Promise<{ rows: number; seconds: number }> {
      let cursor: string | undefined;
      let rows = 0;
      let pages = 0;
      const t0 = performance.now();
      do {
        pages += 1;
        const r = await app.inject({
          method: 'GET',
          url: `/v1/grants?${window}&limit=${PAGE}&format=${format}${cursor ? `&cursor=${cursor}` : ''}`,
          headers: { authorization: `Bearer ${token}` },
        });
        if (r.statusCode !== 200) throw new Error(`${format}: ${r.statusCode} ${r.body.slice(0, 300)}`);
        if (format === 'json' && !decodeToo) {
          // The cursor closes the body: read it there, so "served" counts no JSON parsing.
          cursor = /"nextCursor":"([^"]+)"\}$/.exec(r.body.slice(-4096))?.[1];
        } else if (format === 'json') {
          const body = JSON.parse(r.body) as { items: unknown[]; nextCursor: string | null };
          rows += body.items.length;
          cursor = body.nextCursor ?? undefined;
        } else {
          rows += decodeToo ? decode(format, r.rawPayload) : 0;
          cursor = r.headers['x-next-cursor'] as string | undefined;
        }
      } while (cursor);
      const seconds = (performance.now() - t0) / 1000;
      // Not decoded, the rows are not counted: every page must have come instead.
      if (pages !== Math.ceil(data.grants / PAGE)) throw new Error(`${format}: ${pages} pages, expected ${Math.ceil(data.grants / PAGE)}`);
      return { rows: decodeToo ? rows : data.grants, seconds };
    }

    for (const decodeToo of [false, true]) {
      const best = new Map<Format, number>();
      for (let i = 0; i < ITER; i++) {
        // Rotate the order: no format always runs first (or last) on a busy machine.
        const order: Format[] = (['json', 'csv', 'arrow'] as Format[]).map((_, j, a) => a[(i + j) % a.length] as Format);
        for (const f of order) {
          const r = await pass(f, decodeToo);
          if (decodeToo && r.rows !== data.grants) throw new Error(`${f}: decoded ${r.rows} rows, expected ${data.grants}`);
          best.set(f, Math.max(best.get(f) ?? 0, r.rows / r.seconds));
        }
      }
      const what = decodeToo ? 'served + decoded' : 'served';
      const json = best.get('json') as number;
      for (const f of ['json', 'csv', 'arrow'] as Format[]) {
        report({
          name: `grant history rows/s, ${f}, ${what}`,
          value: best.get(f) as number,
          baselineName: `json, ${what}`,
          baseline: json,
          unit: 'rows/s',
          higherIsBetter: true,
        });
      }
    }

    // Compliance exports of the whole window, one per format, streamed into MinIO with a manifest.
    heading(`compliance export by format: ${data.grants.toLocaleString('en-US')} grants (30 days) into MinIO with manifest, best of ${ITER}`);
    const s3 = createS3Client(config.s3);
    await ensureHistoryBucket(s3, config.s3);
    const records = new ExportRecords(store);
    const exportRate = async (format: ExportFormat): Promise<number> => {
      const state = await records.create({ format, fromMs: endMs - 30 * 86_400_000, toMs: endMs, filters: {}, requestedBy: 'bench' });
      const t0 = performance.now();
      const done = await runComplianceExport({ store, s3, bucket: config.s3.historyBucket, logger: createLogger('silent') }, state.id);
      if (done.rowsDone !== BigInt(data.grants)) throw new Error(`${format}: exported ${done.rowsDone} rows, expected ${data.grants}`);
      return data.grants / ((performance.now() - t0) / 1000);
    };
    const exportFormats: ExportFormat[] = ['parquet', 'csv', 'arrow'];
    const bestExport = new Map<ExportFormat, number>();
    for (let i = 0; i < ITER; i++) {
      for (let j = 0; j < exportFormats.length; j++) {
        const f = exportFormats[(i + j) % exportFormats.length] as ExportFormat;
        bestExport.set(f, Math.max(bestExport.get(f) ?? 0, await exportRate(f)));
      }
    }
    for (const f of exportFormats) {
      report({
        name: `compliance export rows/s, ${f}`,
        value: bestExport.get(f) as number,
        baselineName: 'parquet',
        baseline: bestExport.get('parquet') as number,
        unit: 'rows/s',
        higherIsBetter: true,
      });
    }
  } finally {
    await app.close();
    await close();
  }
}

await main();
