// The manifest written beside every exported file, after the file: its
// presence is what marks the file complete. It names the object, its rows,
// bytes and sha256 (of exactly the stored bytes) and, for history files, the
// revision range the rows cover. 64-bit values are decimal strings.
import type { ExportFormat, WrittenBytes } from '../compliance/chunkedExport.js';

export const MANIFEST_SUFFIX = '.manifest.json';
export const MANIFEST_VERSION = 1;

export interface Manifest {
  version: typeof MANIFEST_VERSION;
  /** grants | events | compliance */
  dataset: string;
  object: string;
  format: ExportFormat;
  rows: string;
  bytes: number;
  sha256: string;
  /** min/max revision in the file (grant_revision for grants, revision for events); null when empty. */
  revisionRange: { min: string; max: string } | null;
  cluster?: string;
  /** The UTC day of a history file (YYYY-MM-DD). */
  date?: string;
  /** A compliance export's id (the API's `/v1/exports/<id>`), so whoever checks the file knows which export it is. */
  exportId?: string;
  /** The range the rows were selected by: [from, to). */
  from: string;
  to: string;
  filters?: Record<string, string>;
  /** A compliance export requested with a scoped token: it holds only these namespaces' and clusters' grants (empty: every one). */
  scope?: { namespaces: string[]; clusters: string[] };
  exportedAt: string;
  /**
   * Compliance exports: per cluster, the signed digests (exporters/digests/)
   * of the periods the export's range overlaps — the contiguous stretch of
   * each cluster's chain from the first to the last of them, superseding
   * digests included — so an auditor can check them with the public key alone
   * (docs/verify-export.mjs). A period not sealed when the export ran has none.
   */
  digests?: Record<string, unknown[]>;
  /**
   * Grants files (compliance exports, grants history): every grant the range holds was checked against the events
   * it was derived from before the file was written (exporters/checks/grantsCheck.ts) — the events the digests hash.
   */
  grantsCheckedAgainstEvents?: boolean;
  /** Ed25519 over the canonical JSON of the manifest without this field (docs/digests.md#tamper-evident-digests). */
  signature?: { algorithm: 'Ed25519'; keyId: string; value: string };
}

export const manifestName = (object: string): string => `${object}${MANIFEST_SUFFIX}`;

export function buildManifest(
  file: WrittenBytes,
  fields: Omit<Manifest, 'version' | 'rows' | 'bytes' | 'sha256' | 'revisionRange' | 'format' | 'exportedAt'>,
): Manifest {
  return {
    version: MANIFEST_VERSION,
    ...fields,
    format: file.format,
    rows: file.rows.toString(),
    bytes: file.bytes,
    sha256: file.sha256,
    revisionRange: file.revisionRange ? { min: file.revisionRange.min.toString(), max: file.revisionRange.max.toString() } : null,
    exportedAt: new Date().toISOString(),
  };
}

export function parseManifest(text: string): Manifest | undefined {
  try {
    const m = JSON.parse(text) as Partial<Manifest>;
    return m.version === MANIFEST_VERSION && typeof m.object === 'string' && typeof m.sha256 === 'string' && typeof m.rows === 'string'
      ? (m as Manifest)
      : undefined;
  } catch {
    return undefined;
  }
}
