// Drives the playground in Debian's headless Chromium through playwright-core (no browser download).
// Usage: node playground.mjs SCENARIO URL ARTIFACT_DIR [TOKEN]
// Prints one JSON object (what the page showed) on stdout; tests/serve/test_playground.py checks it.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [scenario, url, artifacts, token] = process.argv.slice(2);
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const TIMEOUT = 15000;

const profile = mkdtempSync(join(tmpdir(), "openenv-mcp-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  acceptDownloads: true,
  viewport: { width: 1440, height: 900 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-quic"],
});
context.setDefaultTimeout(TIMEOUT);
const out = { scenario, console_errors: [], requests: [], paths: [] };
const page = context.pages()[0] || (await context.newPage());
page.on("console", (m) => { if (m.type() === "error") out.console_errors.push(m.text()); });
page.on("pageerror", (e) => out.console_errors.push(String(e)));
page.on("request", (r) => { const u = new URL(r.url()); out.requests.push(u.host); out.paths.push(`${r.method()} ${u.pathname}`); });

const text = async (sel) => (await page.locator(sel).textContent()).trim();
const tool = (name) => page.locator(`form[data-tool="${name}"]`);
const field = (name, path, kind = "input, textarea, select") => tool(name).locator(`[data-field="${path}"]`).locator(kind).first();

async function openTool(name) {
  const card = page.locator(`details[data-tool-card="${name}"]`);
  if (!(await card.evaluate((d) => d.open))) await card.locator("summary").click();
}

async function call(name) {
  const before = await page.locator("#trajectory > li").count();
  await tool(name).locator("button[type=submit]").click();
  await page.locator(`#trajectory > li[data-step="${before}"]`).waitFor();
  return page.locator(`#trajectory > li[data-step="${before}"]`);
}

async function reset(taskId, seed) {
  if (taskId !== null) await page.selectOption("#task", taskId);
  await page.fill("#seed", String(seed));
  await page.click("#reset");
  await page.locator("#tools form").first().waitFor({ state: "attached" });
  await page.waitForFunction(() => !document.querySelector("#prompt-box").hidden);
}

try {
  await page.goto(url);
  if (scenario === "token") {
    await page.locator("#banner").waitFor();
    out.banner = await text("#banner");
    out.token_box_visible = await page.locator("#token-box").isVisible();
    await page.fill("#token", token);
    await page.locator("#token").press("Enter");
    await page.locator("#token").dispatchEvent("change");
    await page.waitForFunction(() => document.body.dataset.ready === "1");
    await reset("echo-02", 0);
    out.prompt = await text("#prompt");
    await openTool("echo");
    await field("echo", "text").fill("reinforcement learning");
    const li = await call("echo");
    out.result = await li.locator(".result pre").first().textContent();
    out.reward = await text("#reward");
  } else {
    await page.waitForFunction(() => document.body.dataset.ready === "1");
    out.title = await page.title();
    out.env = await text("#env-name");
    out.mode = await text("#mode");
  }

  if (scenario === "files") {
    out.task_options = await page.locator("#task option").count();
    await reset("rename-notes", 3);
    out.prompt = await text("#prompt");
    out.task_label = await text("#task-id");
    out.tools = await page.locator("#tools .tool-name").allTextContents();
    // look around first: fs_list with its defaults
    await openTool("fs_list");
    let li = await call("fs_list");
    out.list_result = await li.locator(".result pre").first().textContent();
    // a mistake: read a file that does not exist -> an error result, the episode goes on
    await openTool("fs_read");
    await field("fs_read", "path").fill("missing.txt");
    li = await call("fs_read");
    out.error_step = { classes: await li.getAttribute("class"), pill: await li.locator(".pill.error").count(),
                       text: await li.locator(".result pre").first().textContent() };
    // solve it: fs_move notes.txt -> meeting-notes.txt
    await openTool("fs_move");
    await field("fs_move", "source").fill("notes.txt");
    await field("fs_move", "destination").fill("meeting-notes.txt");
    li = await call("fs_move");
    out.move_reward = await li.locator(".step-reward").textContent();
    out.reward = await text("#reward");
    out.done = await text("#done");
    out.truncated = await text("#truncated");
    out.steps = await text("#steps");
    out.buttons_disabled_after_done = await page.locator("#tools button[type=submit]:disabled").count();
    await page.locator("details[data-tool-card='fs_list']").evaluate((d) => { d.open = false; });
    await page.screenshot({ path: join(artifacts, "playground.png"), fullPage: true });
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#export")]);
    const saved = join(artifacts, "trajectory.json");
    await download.saveAs(saved);
    out.export_name = download.suggestedFilename();
    out.exported = JSON.parse(readFileSync(saved, "utf8"));
  }

  if (scenario === "forms") {
    await reset(null, 0);
    out.tools = await page.locator("#tools .tool-name").allTextContents();
    await openTool("fail");
    await field("fail", "message").fill("boom");
    let li = await call("fail");
    out.fail = { pill: await li.locator(".pill.error").count(), text: await li.locator(".result pre.error-text").textContent() };
    await openTool("swatch");
    out.swatch_options = await field("swatch", "color", "select").locator("option").allTextContents();
    await field("swatch", "color", "select").selectOption({ label: '"green"' });
    li = await call("swatch");
    const img = li.locator(".result img");
    await img.waitFor();
    out.image = await img.evaluate((i) => ({ w: i.naturalWidth, h: i.naturalHeight, src: i.src.slice(0, 22) }));
    await openTool("pick");
    out.pick_variants = await field("pick", "target", "select").locator("option").allTextContents();
    await field("pick", "level", "select").selectOption({ label: "2" });
    await field("pick", "target", "select").selectOption({ label: "string" });
    await tool("pick").locator('[data-field="target"] input, [data-field="target"] textarea').first().fill("x");
    li = await call("pick");
    out.pick_args = JSON.parse(await li.locator("pre.args").textContent());
    await openTool("submit");
    // a required number left blank: the form says so, nothing is sent
    const steps_before = await page.locator("#trajectory > li").count();
    await tool("submit").locator("button[type=submit]").click();
    out.required_note = (await tool("submit").locator(".actions .hint").textContent()).trim();
    out.required_field_error = (await tool("submit").locator('[data-field="quantity"] .error').textContent()).trim();
    out.sent_while_invalid = (await page.locator("#trajectory > li").count()) - steps_before;
    await field("submit", "quantity").fill("2");
    await field("submit", "color", "select").selectOption({ label: '"blue"' });
    await field("submit", "address.city").fill("Berlin");
    await field("submit", "address.zip").fill("10115");
    await field("submit", "price").fill("9.5");
    await field("submit", "express").check();
    await tool("submit").locator('[data-add="tags"]').click();
    await tool("submit").locator('[data-add="tags"]').click();
    await field("submit", "tags[0]").fill("a");
    await field("submit", "tags[1]").fill("b");
    await tool("submit").locator('[data-add="items"]').click();
    await field("submit", "items[0].sku").fill("W-1");
    await field("submit", "items[0].count").fill("2");
    // the JSON view shows exactly what the form will send
    await tool("submit").locator(".raw-toggle input").check();
    out.raw_json = JSON.parse(await tool("submit").locator("textarea[aria-label='submit arguments JSON']").inputValue());
    await tool("submit").locator(".raw-toggle input").uncheck();
    li = await call("submit");
    out.submit_args = JSON.parse(await li.locator("pre.args").textContent());
    out.structured = await li.locator("details.structured pre").textContent();
    out.reward = await text("#reward");
    out.done = await text("#done");
    await page.screenshot({ path: join(artifacts, "playground-forms.png"), fullPage: true });
  }

  if (scenario === "browser") {
    // the browser world by hand: the real Playwright MCP tools, a snapshot as text, a screenshot as an image
    await reset("wiki-team-lead", 0);
    out.prompt = await text("#prompt");
    out.tools = await page.locator("#tools .tool-name").allTextContents();
    await openTool("browser_navigate");
    await field("browser_navigate", "url").fill("http://wiki.localhost:8000/pages/team-directory");
    let li = await call("browser_navigate");
    out.navigate = await li.locator(".result pre").first().textContent();
    await openTool("browser_snapshot");
    li = await call("browser_snapshot");
    out.snapshot = await li.locator(".result pre").first().textContent();
    await openTool("browser_take_screenshot");
    li = await call("browser_take_screenshot");
    const img = li.locator(".result img");
    await img.waitFor();
    out.image = await img.evaluate((i) => ({ w: i.naturalWidth, h: i.naturalHeight, src: i.src.slice(0, 22) }));
    const lead = /cell "Search"[^\n]*\n\s*- cell "([^"]+)"/.exec(out.snapshot);
    out.answer = lead ? lead[1] : null;
    await openTool("submit");
    await field("submit", "answer").fill(out.answer || "");
    li = await call("submit");
    out.reward = await text("#reward");
    out.done = await text("#done");
    for (const name of ["browser_navigate", "browser_snapshot", "browser_take_screenshot", "submit"]) {
      await page.locator(`details[data-tool-card='${name}']`).evaluate((d) => { d.open = false; });
    }
    await page.screenshot({ path: join(artifacts, "playground-browser.png"), fullPage: true });
  }

  if (scenario === "prod") {
    await page.locator("#tools form").first().waitFor({ state: "attached" });
    out.reset_visible = await page.locator("#reset").isVisible();
    out.reward_visible = await page.locator("#reward").isVisible();
    out.done_visible = await page.locator("#done").isVisible();
    out.tools = await page.locator("#tools .tool-name").allTextContents();
    await openTool("fs_list");
    const li = await call("fs_list");
    out.list_result = await li.locator(".result pre").first().textContent();
    out.step_reward = await li.locator(".step-reward").count();
    out.steps = await text("#steps");
    await page.screenshot({ path: join(artifacts, "playground-prod.png"), fullPage: true });
  }
  if (scenario === "environments") {
    // from the playground's header link to the landing page: its layout at 1440 and at 1024 px
    await page.click("#environments-link");
    await page.waitForFunction(() => / environments$/.test(document.getElementById("status").textContent));
    out.landing_path = new URL(page.url()).pathname;
    out.landing_title = await page.title();
    out.headers = await page.locator("#envs th").allTextContents();
    out.names = await page.locator("#envs tbody td:first-child").allTextContents();
    out.layout = [];
    for (const width of [1440, 1024]) {
      await page.setViewportSize({ width, height: 900 });
      out.layout.push(await page.evaluate(() => {
        const table = document.getElementById("envs").getBoundingClientRect();
        const cells = [...document.querySelectorAll("#envs th, #envs td")];
        return {
          viewport: window.innerWidth,
          page_scrolls: document.documentElement.scrollWidth > window.innerWidth,
          main_display: getComputedStyle(document.querySelector("main")).display,
          table_left: table.left, table_right: table.right, table_width: table.width,
          cells_out: cells.filter((c) => c.getBoundingClientRect().right > table.right + 1).length,
          cells_overflowing: cells.filter((c) => c.scrollWidth > c.clientWidth + 1).length,
          play_width: document.querySelector("#envs th:last-child").getBoundingClientRect().width,
        };
      }));
    }
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.screenshot({ path: join(artifacts, "environments.png"), fullPage: true });
    await page.click("#playground-link");
    await page.waitForFunction(() => document.body.dataset.ready === "1");
    out.back_path = new URL(page.url()).pathname;
  }
  out.banner_hidden = await page.locator("#banner").isHidden();
  out.ok = true;
} catch (e) {
  out.ok = false;
  out.error = String(e && e.stack || e);
  out.banner = await page.locator("#banner").textContent().catch(() => null);
  await page.screenshot({ path: join(artifacts, `failure-${scenario}.png`), fullPage: true }).catch(() => {});
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
out.requests = [...new Set(out.requests)];
out.paths = [...new Set(out.paths)];
console.log(JSON.stringify(out));
