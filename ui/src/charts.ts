// Charts: Apache ECharts, with only the chart kinds and components the pages
// use registered (the bundle stays a fraction of the full library). A chart is
// created once its element is laid out (pages build their DOM detached) and
// follows the element's size.
import { BarChart, CustomChart, LineChart, ScatterChart } from 'echarts/charts';
import { DataZoomComponent, GridComponent, LegendComponent, MarkAreaComponent, MarkLineComponent, TooltipComponent } from 'echarts/components';
import * as echarts from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';
import type { EChartsOption } from 'echarts';
import { h } from './dom.js';

echarts.use([
  BarChart,
  CustomChart,
  LineChart,
  ScatterChart,
  DataZoomComponent,
  GridComponent,
  LegendComponent,
  MarkAreaComponent,
  MarkLineComponent,
  TooltipComponent,
  CanvasRenderer,
]);

export type { EChartsOption };
export type Chart = echarts.ECharts;

export const PALETTE = ['#3b82c4', '#e07b39', '#4caf6a', '#9b59b6', '#c0392b', '#16a2a2', '#b58b00', '#6c757d', '#d6338a', '#2d4f8a'];

/**
 * The charts on screen by name. Also reachable as `window.lockaudit.charts`,
 * for support sessions and the browser tests (which click a bar by asking the
 * chart where it drew it).
 */
export const charts = new Map<string, Chart>();
declare global {
  interface Window {
    lockaudit?: { charts: Map<string, Chart> };
  }
}
window.lockaudit = { charts };

/**
 * A chart element of the given height. The chart is drawn when the element is
 * first laid out; `data-rendered` is set once ECharts has finished drawing.
 * `setup` gets the chart to add event handlers.
 */
export function chartBox(name: string, option: EChartsOption, height: number, setup?: (chart: Chart) => void): HTMLElement {
  const box = h('div', { class: 'chart', 'data-chart': name, style: `height: ${height}px` });
  let chart: Chart | undefined;
  let shown = false;
  const observer = new ResizeObserver(() => {
    if (!box.isConnected) {
      // Built but not in the page yet (a page may await more of itself after building its charts): the callback
      // comes again when the box is laid out.
      if (!shown) return;
      // The page was replaced: free the chart.
      observer.disconnect();
      if (chart && charts.get(name) === chart) charts.delete(name);
      chart?.dispose();
      return;
    }
    shown = true;
    if (box.clientWidth === 0) return;
    if (!chart) {
      charts.get(name)?.dispose();
      chart = echarts.init(box);
      charts.set(name, chart);
      chart.on('finished', () => box.setAttribute('data-rendered', 'true'));
      setup?.(chart);
      chart.setOption(option);
    } else chart.resize();
  });
  observer.observe(box);
  return box;
}

/** Milliseconds as a short human duration for axes and tooltips. */
export function shortMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** Escapes text for the HTML ECharts renders in tooltips. */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}
