// Opens a self-contained HTML report (openenv-mcp validate --html) in Debian's headless Chromium.
// Usage: node report.mjs FILE.html SCREENSHOT.png
// Prints one JSON object: what the page showed, every request it made, console errors.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

const [file, screenshot] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), "openenv-mcp-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const out = { console_errors: [], requests: [] };
try {
  const page = context.pages()[0] || (await context.newPage());
  page.on("console", (m) => { if (m.type() === "error") out.console_errors.push(m.text()); });
  page.on("pageerror", (e) => out.console_errors.push(String(e)));
  page.on("request", (r) => out.requests.push(r.url()));
  await page.goto(pathToFileURL(file).href);
  out.title = await page.title();
  out.verdict = (await page.locator("#verdict").textContent()).trim();
  out.findings = await page.locator("#findings li").allTextContents();
  out.plots = await page.locator("svg").evaluateAll((svgs) => svgs.map((s) => ({
    label: s.getAttribute("aria-label"), bars: s.querySelectorAll("rect").length,
    width: s.getBoundingClientRect().width, height: s.getBoundingClientRect().height })));
  out.rows = await page.locator("#tasks tr").count();
  await page.screenshot({ path: screenshot, fullPage: true });
  out.ok = true;
} catch (e) {
  out.ok = false;
  out.error = String(e);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify(out));
