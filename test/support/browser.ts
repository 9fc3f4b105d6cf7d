// Debian's chromium driven by playwright-core, as the console tests use it:
// headless, a throw-away profile, nothing that talks to Google, and every
// console error collected (a test fails on any).
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { projectRoot } from '../../core/paths.js';
import { tempDir } from './env.js';

const CHROMIUM = '/usr/bin/chromium';
export const SHOTS = path.join(projectRoot, 'test-artifacts', 'ui');

export interface Browser {
  page: Page;
  /** Errors the page logged since the last call; empties the list. */
  takeErrors(): string[];
  /** A full-page screenshot at test-artifacts/ui/<name>.png. */
  shot(name: string): Promise<void>;
  close(): Promise<void>;
}

export async function openBrowser(): Promise<Browser> {
  // Not a skip: without the browser the console is untested, which must show as a failure.
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium); .ci/run does`);
  mkdirSync(SHOTS, { recursive: true });
  const profile = tempDir('lockaudit-chromium-');
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(profile.dir, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
      viewport: { width: 1400, height: 900 },
    });
  } catch (err) {
    profile.remove();
    throw err;
  }
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(10_000);
  const errors: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`${msg.text()} (${msg.location().url})`);
  });
  page.on('pageerror', (err) => errors.push(`page error: ${err.message}`));
  return {
    page,
    takeErrors: () => errors.splice(0),
    shot: async (name) => {
      await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
    },
    close: async () => {
      await context.close();
      profile.remove();
    },
  };
}

/** Signs in through the sign-in form, as a person does. */
export async function signIn(page: Page, base: string, token: string): Promise<void> {
  await page.goto(`${base}/ui/`);
  await page
    .locator('form.signin')
    .waitFor()
    .catch(async (err: Error) => {
      throw new Error(`${err.message}\nthe page shows: ${(await page.locator('body').innerText()).slice(0, 500)}`);
    });
  await page.fill('input[name=token]', token);
  await page.click('form.signin button');
  await page.locator('nav a.active').waitFor();
}
