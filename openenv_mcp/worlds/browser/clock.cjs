// The browser world's clock for the Playwright MCP server (loaded with `node --require`, simulation only):
// the wall clock reads the world's fixed "now" ($OPENENV_BROWSER_CLOCK), so what the server names after
// the time (its snapshot, screenshot and console files) is the same in every episode of a seed. Timers and
// timeouts run on the monotonic clock, which is left alone. The pages' own clock (Chromium's) is untouched.
"use strict";
const FIXED = Date.parse(process.env.OPENENV_BROWSER_CLOCK || "2026-03-16T09:30:00Z");
const RealDate = Date;
class WorldDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(FIXED);
    else super(...args);
  }
  static now() {
    return FIXED;
  }
}
globalThis.Date = WorldDate;
