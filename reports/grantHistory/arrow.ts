// Grant history as an Arrow IPC stream (format=arrow), written by ClickHouse's
// own ArrowStream encoder and passed through unparsed: notebooks (pyarrow,
// polars, DuckDB) read it directly, tokens and revisions as uint64 — exact,
// never a JS number on the way. Two queries: the page's end (sort key only),
// then the rows up to that end, so the cursor is known before the first byte.
import type { Readable } from 'node:stream';
import type { ClickHouseSettings } from '@clickhouse/client';
import { END_KINDS } from '../../core/events.js';
import { loadSql } from '../../platform/sql.js';
import { asLimitError, reportRows } from '../../platform/reportQuery.js';
import type { Narrowed, ReadScope } from '../../grants/scope.js';
import { cursorAfter, historySettings, planPage, type GrantHistoryDeps, type GrantHistoryParams, type PagePosition } from './index.js';

const PAGE_END = loadSql('reports/grantHistory/pageEnd.sql');
const PAGE_END_DESC = loadSql('reports/grantHistory/pageEndDesc.sql');
const HISTORY_ARROW = loadSql('reports/grantHistory/historyArrow.sql');
const HISTORY_ARROW_DESC = loadSql('reports/grantHistory/historyArrowDesc.sql');

export const ARROW_STREAM_TYPE = 'application/vnd.apache.arrow.stream';

// apache-arrow (JS) reads ClickHouse's ArrowStream only uncompressed; strings as Arrow utf8, not binary.
const ARROW_SETTINGS: ClickHouseSettings = {
  output_format_arrow_compression_method: 'none',
  output_format_arrow_string_as_string: 1,
};

export interface ArrowPage {
  /** The Arrow IPC stream (schema, record batches, end marker). */
  stream: Readable;
  nextCursor: string | null;
  /** What a scoped reader's request was narrowed to, or null. */
  narrowed: Narrowed | null;
}

/** One page of grant history as Arrow IPC: the same filters, scope, limits, window and cursors as the JSON page. */
export async function grantHistoryArrow(deps: GrantHistoryDeps, p: GrantHistoryParams, nowMs: number, scope: ReadScope = null): Promise<ArrowPage> {
  const page = await planPage(deps, p, nowMs, scope);
  const sourceSettings = historySettings(String(page.params.source));
  const desc = page.params.desc === 1;
  const ends = await reportRows<PagePosition>(deps, desc ? PAGE_END_DESC : PAGE_END, { ...page.params, offset: page.limit - 1 }, sourceSettings);
  // Two rows: the page's last and one more, so another page follows. Fewer: this is the last page.
  const end = ends.length === 2 ? ends[0] : undefined;
  const settings: ClickHouseSettings = { ...ARROW_SETTINGS, ...sourceSettings, max_execution_time: deps.limits.queryTimeoutMs / 1000 };
  try {
    const stream = await deps.store.bytes(
      (desc ? HISTORY_ARROW_DESC : HISTORY_ARROW).text,
      'ArrowStream',
      {
        ...page.params,
        endKinds: [...END_KINDS],
        hasEnd: end ? 1 : 0,
        endMs: end ? Number(end.granted_at_ms) : 0,
        endCluster: end?.cluster ?? '',
        endKey: end?.key ?? '',
        endRevision: end?.grant_revision ?? '0',
        endSpool: end?.spool_id ?? '',
        endTimeline: Number(end?.timeline ?? 0),
      },
      settings,
    );
    return { stream, nextCursor: end ? cursorAfter(deps, page, end) : null, narrowed: page.narrowed };
  } catch (err) {
    throw asLimitError(deps, err);
  }
}
