// What the simulator counts, and the summary it prints.

export class SimStats {
  readonly counts = new Map<string, number>();
  readonly grantsByClass = new Map<string, { protected: number; unprotected: number }>();
  readonly acquireMs: number[] = [];
  readonly startedAt = Date.now();

  inc(name: string, by = 1): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + by);
  }

  get(name: string): number {
    return this.counts.get(name) ?? 0;
  }

  granted(className: string, unprotected: boolean): void {
    const entry = this.grantsByClass.get(className) ?? { protected: 0, unprotected: 0 };
    if (unprotected) entry.unprotected++;
    else entry.protected++;
    this.grantsByClass.set(className, entry);
  }

  summary(): Record<string, unknown> {
    const seconds = Math.max(1, (Date.now() - this.startedAt) / 1000);
    const sorted = [...this.acquireMs].sort((a, b) => a - b);
    const counts = Object.fromEntries([...this.counts.entries()].sort(([a], [b]) => a.localeCompare(b)));
    return {
      seconds: Math.round(seconds),
      counts,
      perMinute: Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, Math.round((v / seconds) * 60)])),
      acquireLatencyMs: { p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), n: sorted.length },
      grantsByClass: Object.fromEntries([...this.grantsByClass.entries()].sort(([a], [b]) => a.localeCompare(b))),
    };
  }

  render(): string {
    const s = this.summary() as {
      seconds: number;
      counts: Record<string, number>;
      perMinute: Record<string, number>;
      acquireLatencyMs: { p50: number; p99: number; n: number };
      grantsByClass: Record<string, { protected: number; unprotected: number }>;
    };
    const lines = [`simulation: ${s.seconds} s`, '', `${'event'.padEnd(34)} ${'total'.padStart(8)} ${'per min'.padStart(8)}`];
    for (const [k, v] of Object.entries(s.counts)) lines.push(`${k.padEnd(34)} ${String(v).padStart(8)} ${String(s.perMinute[k]).padStart(8)}`);
    lines.push(
      '',
      `acquire latency (all outcomes): p50 ${s.acquireLatencyMs.p50} ms, p99 ${s.acquireLatencyMs.p99} ms over ${s.acquireLatencyMs.n} requests`,
      '',
      `${'class'.padEnd(34)} ${'granted'.padStart(8)} ${'token 0'.padStart(8)}`,
    );
    for (const [k, v] of Object.entries(s.grantsByClass)) lines.push(`${k.padEnd(34)} ${String(v.protected).padStart(8)} ${String(v.unprotected).padStart(8)}`);
    return lines.join('\n');
  }
}

function round(n: number): number {
  return Number.isFinite(n) ? Math.round(n * 10) / 10 : 0;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}
