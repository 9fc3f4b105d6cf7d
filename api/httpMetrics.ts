// HTTP metrics of the API, on the process registry: requests by route
// template (never the URL: bounded), method and status class, and their
// latency. Unmatched URLs (404s) share one route label.
import { Counter, Histogram, type Registry } from 'prom-client';
import { oncePerRegistry } from '../core/metrics.js';

export interface HttpMetrics {
  requests: Counter<'method' | 'route' | 'code'>;
  seconds: Histogram<'method' | 'route'>;
}

export const httpMetrics: (registry: Registry) => HttpMetrics = oncePerRegistry((registers) => ({
  requests: new Counter({
    name: 'lockaudit_http_requests_total',
    help: 'API requests answered, by route template, method and status class (2xx, 4xx, 5xx).',
    labelNames: ['method', 'route', 'code'],
    registers,
  }),
  seconds: new Histogram({
    name: 'lockaudit_http_request_duration_seconds',
    help: 'Time to answer an API request, by route template and method.',
    labelNames: ['method', 'route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  }),
}));

/** The label of a route: its template ('unmatched' when none matched). */
export function routeLabel(url: string | undefined): string {
  return url ?? 'unmatched';
}

export function statusClass(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}
