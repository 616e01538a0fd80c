// Open the dashboard's review page (dashboard/pages/review.py) in Debian's headless chromium
// (playwright-core, no browser download), record one decision on one item of the queue as a person
// would (the item's form: decision, who, why, "Record decision"), and print what the page showed as
// JSON on stdout; save a full-page screenshot.
//
//   node review.mjs --url http://127.0.0.1:8501 --rank 1 --by dana --why "asked the team"
//       [--decision "Accept candidate 1"] [--screenshot /tmp/x/review.png] [--timeout 90]
//
// Output: {"recorded": the confirmation's text, "decision": the option chosen, "headers": [...],
//          "items": [first line of each item...], "text": the page's visible text,
//          "exceptions": [...], "page_errors": [...], "screenshot": path}

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { chromium } from 'playwright-core';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '..', '..');
const CHROMIUM = process.env.GPUCOST_CHROMIUM || '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8501' },
    rank: { type: 'string', default: '1' },
    by: { type: 'string', default: 'reviewer' },
    why: { type: 'string', default: '' },
    decision: { type: 'string', default: 'Accept candidate 1' },
    screenshot: { type: 'string', default: join(REPO, 'target', 'screenshots', 'review.png') },
    timeout: { type: 'string', default: '90' },
  },
});
const timeout = Number(values.timeout) * 1000;

// Streamlit has finished a run: no run in progress and the page's last element is there, twice in a
// row half a second apart (a rerun may start a moment after a click).
async function idle(page) {
  const settled = () =>
    page.waitForFunction(() => {
      const status = document.querySelector('[data-testid="stStatusWidget"]');
      if (status && /running/i.test(status.innerText)) return false;
      return document.querySelector('#gpucost-review-rendered') !== null;
    });
  await settled();
  await page.waitForTimeout(500);
  await settled();
}

async function main() {
  const userDataDir = mkdtempSync(join(tmpdir(), 'gpucost-chromium-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport: { width: 1440, height: 1000 },
      timeout,
    });
    const page = context.pages()[0] || (await context.newPage());
    page.setDefaultTimeout(timeout);
    const errors = [];
    page.on('pageerror', (error) => errors.push(String(error)));

    await page.goto(`${values.url.replace(/\/$/, '')}/review`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('#gpucost-review-rendered', { state: 'attached' });
    await idle(page);

    const item = page.locator(`.st-key-review-item-${values.rank}`);
    await item.waitFor();
    // the decision (the first option, accepting candidate 1, is the default; choose another by name)
    const box = item.getByRole('combobox', { name: 'Decision', exact: true });
    const current = await item.locator('[data-testid="stSelectbox"]').first().textContent();
    if (!current.includes(values.decision)) {
      await box.click();
      await page.getByRole('option').filter({ hasText: values.decision }).first().click();
    }
    // the option shown: the select box's text, or its input's value (newer Streamlit versions)
    const selectbox = item.locator('[data-testid="stSelectbox"]').first();
    const decision = [
      (await selectbox.innerText()).trim(),
      await box.inputValue({ timeout: 2000 }).catch(() => ''),
      await selectbox
        .locator('[data-baseweb="select"]')
        .first()
        .textContent({ timeout: 2000 })
        .catch(() => ''),
    ].join(' | ');
    for (const [label, text] of [
      ['Decided by', values.by],
      ['Why', values.why],
    ]) {
      const input = item.getByLabel(label, { exact: true });
      await input.fill(text);
      await input.press('Tab');
    }
    await item.getByRole('button', { name: 'Record decision' }).click();
    const recorded = page.locator(`.st-key-review-recorded-${values.rank}`);
    const failed = item.locator('[data-testid="stAlert"]').filter({ hasNotText: 'Decided:' });
    // the confirmation, or an error in the item (the one that loses the race must not reject later)
    const quiet = (promise) => promise.then(() => true).catch(() => false);
    const shown = await Promise.race([quiet(recorded.waitFor()), quiet(failed.first().waitFor())]);
    if (!shown) throw new Error('no confirmation and no error after "Record decision"');
    await idle(page);

    const result = await page.evaluate(() => {
      const text = (element) => element?.innerText?.trim() ?? null;
      return {
        text: document.body.innerText,
        headers: [...document.querySelectorAll('h2')].map((header) => text(header)),
        items: [...document.querySelectorAll('[class*="st-key-review-item-"]')].map(
          (element) => (text(element) || '').split('\n')[0],
        ),
        alerts: [...document.querySelectorAll('[data-testid="stAlert"]')].map((alert) =>
          text(alert),
        ),
        exceptions: [...document.querySelectorAll('[data-testid="stException"]')].map((element) =>
          text(element),
        ),
      };
    });
    result.decision = decision;
    result.recorded = (await recorded.count()) ? (await recorded.innerText()).trim() : null;

    await page.setViewportSize({ width: 1440, height: 3000 });
    await page.waitForTimeout(500);
    const screenshot = resolve(values.screenshot);
    mkdirSync(dirname(screenshot), { recursive: true });
    await page.screenshot({ path: screenshot, fullPage: true });
    result.screenshot = screenshot;
    result.page_errors = errors;
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    if (context) await context.close();
    rmSync(userDataDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`review.mjs: ${error.stack || error}\n`);
  process.exit(1);
});
