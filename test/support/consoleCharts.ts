// Reading the console's charts from a browser test. The charts draw on a
// canvas, so the test asks each chart (through window.lockaudit.charts, which
// ui/src/charts.ts keeps) what it drew and where.
import type { Page } from 'playwright-core';

interface ChartHandle {
  getOption(): unknown;
  convertToPixel(finder: { gridIndex: number }, value: number[]): number[];
  dispatchAction(action: { type: string }): void;
}
declare global {
  interface Window {
    lockaudit?: { charts: Map<string, ChartHandle> };
  }
}

export type Point = [number, number | null];

/** Waits until chart `name` has finished drawing. */
export async function chartRendered(page: Page, name: string): Promise<void> {
  await page.locator(`[data-chart="${name}"][data-rendered]`).waitFor();
}

/** The data of each series of chart `name`, by series name. */
export async function chartSeries(page: Page, name: string): Promise<Record<string, unknown[]>> {
  return page.evaluate((n) => {
    const option = window.lockaudit?.charts.get(n)?.getOption() as { series: { name: string; data: unknown[] }[] } | undefined;
    if (!option) throw new Error(`no chart ${n} on the page`);
    return Object.fromEntries(option.series.map((s) => [s.name, s.data]));
  }, name);
}

/** The y values of each line of chart `name` ([x, y] points), empty buckets (null) left out. */
export async function chartLines(page: Page, name: string): Promise<Record<string, number[]>> {
  const series = await chartSeries(page, name);
  return Object.fromEntries(Object.entries(series).map(([k, data]) => [k, (data as Point[]).filter((p) => p[1] !== null).map((p) => p[1] as number)]));
}

/** Clicks chart `name` at the data coordinates `value` (e.g. [time ms, lane index]) of its first grid. */
export async function clickChartAt(page: Page, name: string, value: number[]): Promise<void> {
  const [x, y] = await page.evaluate(([n, v]) => window.lockaudit?.charts.get(n as string)?.convertToPixel({ gridIndex: 0 }, v as number[]) ?? [], [
    name,
    value,
  ] as const);
  const box = await page.locator(`[data-chart="${name}"]`).boundingBox();
  if (!box || x === undefined || y === undefined) throw new Error(`chart ${name} is not on screen`);
  await page.mouse.click(box.x + x, box.y + y);
}

/**
 * Clicks the middle of the bar chart `name` drew from `start` to `end` on lane `lane`. The console draws a bar at
 * least 2 px wide from its start (ui/src/pages/timeline.ts laneRect), so a short grant's middle by time is its left
 * edge, where a click's whole-pixel position can fall just outside it; the middle of what was drawn cannot.
 */
export async function clickBar(page: Page, name: string, bar: [number, number, number]): Promise<void> {
  const [x0, x1, y] = await page.evaluate(
    ([n, [start, end, lane]]) => {
      const chart = window.lockaudit?.charts.get(n);
      const from = chart?.convertToPixel({ gridIndex: 0 }, [start, lane]) ?? [];
      const to = chart?.convertToPixel({ gridIndex: 0 }, [end, lane]) ?? [];
      return [from[0], to[0], from[1]];
    },
    [name, bar] as [string, [number, number, number]],
  );
  const box = await page.locator(`[data-chart="${name}"]`).boundingBox();
  if (!box || x0 === undefined || x1 === undefined || y === undefined) throw new Error(`chart ${name} is not on screen`);
  await page.mouse.click(box.x + x0 + Math.max(2, x1 - x0) / 2, box.y + y);
}

/** Hides chart `name`'s tooltip (left by a click), e.g. before a screenshot. */
export async function hideTooltip(page: Page, name: string): Promise<void> {
  await page.mouse.move(0, 0);
  await page.evaluate((n) => window.lockaudit?.charts.get(n)?.dispatchAction({ type: 'hideTip' }), name);
  await page.waitForTimeout(500); // the tooltip fades out; a screenshot taken at once still shows it
}
