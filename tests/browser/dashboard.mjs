// Load the gpucost showback dashboard in Debian's headless chromium (playwright-core, no browser
// download), wait until its numbers and charts have rendered, read them, optionally drill down from a
// team to one of its workloads, print what it read as JSON on stdout and save a full-page screenshot.
//
//   node dashboard.mjs --url http://127.0.0.1:8501 --screenshot /tmp/x/dashboard.png [--timeout 90]
//       [--drill '["team", "project", "user", "workload"]']
//
// With GPUCOST_UPDATE_SCREENSHOT=1 the screenshot is also copied to docs/img/dashboard.png.
// Output: {"metrics": [{"label", "value", "delta"}...], "alerts": [...], "headers": [...],
//          "charts": n, "tables": n, "inference": [[cell...] per row],
//          "text": the page's visible text, "drill": {"options": [[...]...],
//          "metrics": [...]} (with --drill), "screenshot": path, "title": ...}

import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
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
    screenshot: { type: 'string', default: join(REPO, 'target', 'screenshots', 'dashboard.png') },
    timeout: { type: 'string', default: '90' },
    width: { type: 'string', default: '1440' },
    drill: { type: 'string', default: '' },
  },
});
const drill = values.drill ? JSON.parse(values.drill) : [];
const timeout = Number(values.timeout) * 1000;
const width = Number(values.width);

// Sections the page always renders (see dashboard/app.py); the numbers are read once all are there.
const SECTIONS = [
  'The month: ',
  'Reconciliation: bill vs allocation',
  'Daily cost by owner',
  'Monthly charges',
  'Drill-down: team, project, user, workload',
  'GPU cost: utilised vs wasted',
  'Unit cost of inference',
  'Idle capacity of GPU nodes and who carries it',
  'Unallocated money',
  'Budget burn',
  'Chargeback statement (cents)',
];
// The drill-down's select boxes, one per level (dashboard/app.py, DRILL_LABELS).
const DRILL_LABELS = [
  'Drill-down team',
  'Drill-down project',
  'Drill-down user',
  'Drill-down workload',
];

// Every st.metric on the page: label, value and delta (null when it has none).
function readMetrics() {
  const text = (element, selector) => element.querySelector(selector)?.innerText?.trim() ?? null;
  return [...document.querySelectorAll('[data-testid="stMetric"]')].map((metric) => ({
    label: text(metric, '[data-testid="stMetricLabel"]'),
    value: text(metric, '[data-testid="stMetricValue"]'),
    delta: text(metric, '[data-testid="stMetricDelta"]'),
  }));
}

// Streamlit has finished a run: no run in progress and the marker the app writes last is on the
// page, twice in a row half a second apart (a rerun may start a moment after a click).
async function idle(page) {
  const settled = () =>
    page.waitForFunction(() => {
      const status = document.querySelector('[data-testid="stStatusWidget"]');
      if (status && /running/i.test(status.innerText)) return false;
      return document.querySelector('#gpucost-dashboard-rendered') !== null;
    });
  await settled();
  await page.waitForTimeout(500);
  await settled();
}

// Choose `owner` in the select box `label`: type it (the box filters its options as one types),
// then click the option that names it ("<owner>: <amount>"). Returns the options offered then.
async function choose(page, label, owner) {
  const input = page.getByRole('combobox', { name: label, exact: true });
  await input.waitFor();
  await input.click();
  await input.fill(owner);
  const option = page.getByRole('option').filter({ hasText: `${owner}: ` }).first();
  await option.waitFor();
  const offered = await page.getByRole('option').allInnerTexts();
  await option.click();
  await idle(page);
  return offered;
}

async function main() {
  // A fresh profile every run: launchPersistentContext passes it as --user-data-dir.
  const userDataDir = mkdtempSync(join(tmpdir(), 'gpucost-chromium-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport: { width, height: 1000 },
      timeout,
    });
    const page = context.pages()[0] || (await context.newPage());
    page.setDefaultTimeout(timeout);
    const errors = [];
    page.on('pageerror', (error) => errors.push(String(error)));

    await page.goto(values.url, { waitUntil: 'domcontentloaded' });
    // The last element the app writes, then every section header and the key metrics.
    await page.waitForSelector('#gpucost-dashboard-rendered', { state: 'attached' });
    await page.waitForFunction(
      (sections) => {
        const text = document.body.innerText;
        return sections.every((section) => text.includes(section));
      },
      SECTIONS,
    );
    await page.waitForSelector('[data-testid="stMetric"]');
    // Streamlit is idle (no script running) and every Vega chart has drawn its canvas or svg.
    await page.waitForFunction(() => {
      const status = document.querySelector('[data-testid="stStatusWidget"]');
      if (status && /running/i.test(status.innerText)) return false;
      const charts = document.querySelectorAll('[data-testid="stVegaLiteChart"]');
      if (charts.length === 0) return false;
      return [...charts].every((chart) => chart.querySelector('canvas, svg.marks'));
    });
    await page.waitForLoadState('networkidle').catch(() => {});
    // Data frames mount after the charts on a busy machine: wait until at least one is there and their
    // count has held for two consecutive polls a second apart.
    await page.waitForSelector('[data-testid="stDataFrame"]');
    let previous = -1;
    for (;;) {
      const count = await page.evaluate(
        () => document.querySelectorAll('[data-testid="stDataFrame"]').length,
      );
      if (count === previous) break;
      previous = count;
      await page.waitForTimeout(1000);
    }

    const result = await page.evaluate(() => {
      const text = (element, selector) =>
        (selector ? element.querySelector(selector) : element)?.innerText?.trim() ?? null;
      return {
        title: text(document, 'h1'),
        text: document.body.innerText,
        alerts: [...document.querySelectorAll('[data-testid="stAlert"]')].map((alert) =>
          text(alert),
        ),
        headers: [...document.querySelectorAll('h2')].map((header) => text(header)),
        charts: document.querySelectorAll('[data-testid="stVegaLiteChart"]').length,
        tables: document.querySelectorAll('[data-testid="stDataFrame"]').length,
        // the unit cost of inference: its table's rows (the data grid's accessible table; every
        // row is drawn, the table is tall enough), each row's cells as text
        inference: [
          ...document.querySelectorAll('.st-key-inference-unit-cost [data-testid="stDataFrame"] tr'),
        ].map((row) => [...row.querySelectorAll('th, td')].map((cell) => cell.innerText.trim())),
        exceptions: [...document.querySelectorAll('[data-testid="stException"]')].map((item) =>
          text(item),
        ),
      };
    });
    result.metrics = await page.evaluate(readMetrics);

    if (drill.length) {
      const options = [];
      for (const [level, owner] of drill.entries()) {
        options.push(await choose(page, DRILL_LABELS[level], owner));
      }
      if (drill.length === DRILL_LABELS.length) {
        await page
          .locator('[data-testid="stMetric"]')
          .filter({ hasText: 'Workload GPU-hours' })
          .waitFor();
      }
      await idle(page);
      result.drill = {
        options,
        metrics: (await page.evaluate(readMetrics)).filter((metric) =>
          metric.label.startsWith('Workload'),
        ),
      };
    }

    // Streamlit scrolls inside its own container, so a full-page shot of a 1000 px viewport would
    // cut the page: grow the viewport to the content first.
    await idle(page);
    const height = await page.evaluate(() => {
      const main = document.querySelector('[data-testid="stMain"]') || document.scrollingElement;
      const last = document.querySelector('#gpucost-dashboard-rendered');
      const bottom = last ? last.getBoundingClientRect().bottom + main.scrollTop : main.scrollHeight;
      return Math.ceil(bottom + 60);
    });
    await page.setViewportSize({ width, height: Math.min(Math.max(height, 1000), 16000) });
    // the drill-down's clicks scrolled the page: shoot it from the top
    await page.evaluate(() => {
      const main = document.querySelector('[data-testid="stMain"]') || document.scrollingElement;
      main.scrollTo(0, 0);
    });
    await page.waitForTimeout(1500);
    const screenshot = resolve(values.screenshot);
    mkdirSync(dirname(screenshot), { recursive: true });
    await page.screenshot({ path: screenshot, fullPage: true });
    result.screenshot = screenshot;
    if (process.env.GPUCOST_UPDATE_SCREENSHOT === '1') {
      const docs = join(REPO, 'docs', 'img', 'dashboard.png');
      mkdirSync(dirname(docs), { recursive: true });
      copyFileSync(screenshot, docs);
      result.copied_to = docs;
    }
    result.page_errors = errors;
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    if (context) await context.close();
    rmSync(userDataDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`dashboard.mjs: ${error.stack || error}\n`);
  process.exit(1);
});
