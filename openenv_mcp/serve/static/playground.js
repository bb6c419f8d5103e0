/* openenv-mcp playground: act as the agent by hand.
 *
 * Simulation mode talks to the control plane (POST /episodes, .../reset,
 * .../step, GET .../state); production mode talks MCP to /mcp (initialize,
 * tools/list, tools/call). Tool forms are generated from each tool's JSON
 * Schema. No framework, no external assets.
 */
"use strict";

(() => {
  // -- tiny DOM helpers ----------------------------------------------------------
  const $ = (sel, root = document) => root.querySelector(sel);
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "text") el.textContent = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k in el && typeof v !== "string") el[k] = v;
      else el.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c);
    return el;
  }
  const add = (el, ...children) => { el.append(...children.filter((c) => c !== null && c !== undefined)); return el; };
  let uid = 0;
  const nextId = (p) => `${p}-${++uid}`;

  const state = {
    info: null, mode: "sim", token: sessionStorage.getItem("openenv-mcp-token") || "",
    episodeId: null, episodeKey: null, task: null, seed: null, tools: [], steps: [],
    reward: 0, done: false, truncated: false, stepCount: 0,
    mcp: { session: null, protocol: null, next: 1 },
  };

  // -- HTTP ------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(message, status) { super(message); this.status = status; }
  }

  function headers(extra) {
    const out = { "Content-Type": "application/json", ...(extra || {}) };
    if (state.token) out.Authorization = `Bearer ${state.token}`;
    if (state.episodeKey) out["OpenEnv-Episode-Key"] = state.episodeKey;  // this episode's capability
    return out;
  }

  async function api(method, path, body) {
    const resp = await fetch(path, { method, headers: headers(), body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await resp.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    if (!resp.ok) throw new ApiError(errorMessage(resp, data, text), resp.status);
    return data;
  }

  function errorMessage(resp, data, text) {
    if (resp.status === 401) {
      $("#token-box").hidden = false;
      return "The server requires a bearer token: enter the --token value at the top right, then try again.";
    }
    const err = data && (data.error || data.detail || data.message);
    const msg = typeof err === "string" ? err : (err && (err.message || JSON.stringify(err))) || text || resp.statusText;
    return `${resp.status}: ${msg}`;
  }

  // -- control plane (simulation) -----------------------------------------------------
  const sim = {
    async reset(seed, taskId) {
      sim.close();
      const body = {};
      if (seed !== null) body.seed = seed;
      if (taskId) body.task_id = taskId;
      const created = await api("POST", "episodes", body);  // creates and resets in one call
      state.episodeId = created.episode_id;
      state.episodeKey = created.episode_key || null;
      state.mcpUrl = created.mcp_url || null;
      return created.observation;
    },
    close() {  // fire and forget; also used when the page goes away
      if (!state.episodeId) return;
      const id = state.episodeId;
      const sent = headers();
      state.episodeId = null;
      state.episodeKey = null;
      fetch(`episodes/${enc(id)}`, { method: "DELETE", headers: sent, keepalive: true }).catch(() => {});
    },
    async step(name, args) {
      const reply = await api("POST", `episodes/${enc(state.episodeId)}/step`,
        { action: { type: "call_tool", name, arguments: args } });
      return reply.observation || reply;
    },
    async state() {
      const reply = await api("GET", `episodes/${enc(state.episodeId)}/state`);
      return reply.state || reply;
    },
  };
  const enc = encodeURIComponent;

  // -- MCP over streamable HTTP (production) ---------------------------------------------
  const MCP_PROTOCOL = "2025-11-25";
  const mcp = {
    async request(method, params, notify) {
      const msg = { jsonrpc: "2.0", method };
      if (params !== undefined) msg.params = params;
      if (!notify) msg.id = state.mcp.next++;
      const extra = { Accept: "application/json, text/event-stream" };
      if (state.mcp.session) extra["Mcp-Session-Id"] = state.mcp.session;
      if (state.mcp.protocol) extra["MCP-Protocol-Version"] = state.mcp.protocol;
      const resp = await fetch("mcp", { method: "POST", headers: headers(extra), body: JSON.stringify(msg) });
      const session = resp.headers.get("mcp-session-id");
      if (session) state.mcp.session = session;
      const text = await resp.text();
      if (!resp.ok) {
        let data = null;
        try { data = JSON.parse(text); } catch (e) { /* not JSON */ }
        throw new ApiError(errorMessage(resp, data, text), resp.status);
      }
      if (notify) return null;
      const reply = parseMcpReply(resp.headers.get("content-type") || "", text, msg.id);
      if (reply.error) throw new ApiError(`MCP error ${reply.error.code}: ${reply.error.message}`, 200);
      return reply.result;
    },
    async connect() {
      state.mcp = { session: null, protocol: null, next: 1 };
      const init = await mcp.request("initialize", {
        protocolVersion: MCP_PROTOCOL, capabilities: {},
        clientInfo: { name: "openenv-mcp-playground", version: "1" },
      });
      state.mcp.protocol = init.protocolVersion || MCP_PROTOCOL;
      await mcp.request("notifications/initialized", undefined, true);
      const tools = [];
      let cursor;
      do {
        const page = await mcp.request("tools/list", cursor ? { cursor } : {});
        tools.push(...(page.tools || []));
        cursor = page.nextCursor;
      } while (cursor);
      return { init, tools };
    },
    async call(name, args) { return mcp.request("tools/call", { name, arguments: args }); },
  };

  function parseMcpReply(type, text, id) {
    if (type.includes("text/event-stream")) {
      for (const block of text.split(/\r?\n\r?\n/)) {
        const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
        if (!data) continue;
        let msg;
        try { msg = JSON.parse(data); } catch (e) { continue; }
        if (msg.id === id) return msg;
      }
      throw new ApiError("the MCP server's event stream ended without an answer", 200);
    }
    return JSON.parse(text);
  }

  // -- JSON Schema -> form ---------------------------------------------------------------
  function resolve(schema, root) {
    let s = schema || {};
    for (let i = 0; i < 20 && s.$ref; i++) {
      const ref = s.$ref;
      if (!ref.startsWith("#/")) break;
      let target = root;
      for (const part of ref.slice(2).split("/")) target = target && target[part.replace(/~1/g, "/").replace(/~0/g, "~")];
      const { $ref, ...rest } = s;
      s = { ...(target || {}), ...rest };
    }
    if (s.allOf && s.allOf.length === 1 && !s.type) {
      const { allOf, ...rest } = s;
      s = { ...resolve(allOf[0], root), ...rest };
    }
    return s;
  }

  function typeOf(s) {
    if (Array.isArray(s.type)) return s.type.filter((t) => t !== "null")[0] || "null";
    if (s.type) return s.type;
    if (s.enum) return typeof s.enum[0] === "number" ? "number" : "string";
    if (s.const !== undefined) return "const";
    if (s.properties) return "object";
    if (s.items) return "array";
    return "any";
  }

  /** Unwrap Optional[T] (anyOf/oneOf [T, null]); returns [schema, nullable]. */
  function unwrapNullable(s, root) {
    const alts = s.anyOf || s.oneOf;
    if (!alts) return [s, Array.isArray(s.type) && s.type.includes("null")];
    const real = alts.map((a) => resolve(a, root)).filter((a) => a.type !== "null");
    if (real.length === 1 && real.length < alts.length) {
      const { anyOf, oneOf, ...rest } = s;
      return [{ ...real[0], ...rest }, true];
    }
    return [s, false];
  }

  /**
   * A field: { el, get() -> {ok, value, omit, error} }.
   * `required` fields are always sent (a required string may be empty);
   * optional ones are omitted while left blank / at their default.
   */
  function buildField(name, rawSchema, required, root, path) {
    const [schema, nullable] = unwrapNullable(resolve(rawSchema, root), root);
    const alts = schema.anyOf || schema.oneOf;
    const type = alts ? "union" : typeOf(schema);
    const id = nextId("f");
    const wrap = h("div", { class: "field", "data-field": path });
    const labelText = [name, required ? h("span", { class: "req", title: "required", text: "*" }) : null,
      h("span", { class: "type", text: describeType(schema, type, nullable) })];
    const desc = schema.description ? h("p", { class: "desc", text: schema.description }) : null;
    const errorEl = h("p", { class: "error", hidden: true });
    let control;
    let get;

    const blank = (v) => v === "" || v === undefined;
    if (schema.enum) {
      control = h("select", { id, name: path },
        required ? null : h("option", { value: "", text: schema.default !== undefined ? `(default: ${JSON.stringify(schema.default)})` : "(unset)" }),
        schema.enum.map((v, i) => h("option", { value: String(i), text: JSON.stringify(v) })));
      if (required && schema.default !== undefined) control.value = String(schema.enum.indexOf(schema.default));
      get = () => (control.value === "" ? { omit: true } : { value: schema.enum[Number(control.value)] });
    } else if (type === "const") {
      control = h("input", { id, name: path, type: "text", value: JSON.stringify(schema.const), disabled: true });
      get = () => ({ value: schema.const });
    } else if (type === "string") {
      const multiline = !(schema.format || schema.maxLength <= 80);
      control = multiline
        ? h("textarea", { id, name: path, rows: 1, spellcheck: false, placeholder: placeholderFor(schema) })
        : h("input", { id, name: path, type: "text", placeholder: placeholderFor(schema) });
      if (multiline) control.addEventListener("input", () => autoGrow(control));
      get = () => (blank(control.value) && !required ? { omit: true } : { value: control.value });
    } else if (type === "integer" || type === "number") {
      control = h("input", { id, name: path, type: "number", step: type === "integer" ? "1" : "any",
        min: schema.minimum, max: schema.maximum, placeholder: placeholderFor(schema) });
      get = () => {
        if (blank(control.value)) return required ? { error: "required" } : { omit: true };
        const v = Number(control.value);
        if (!Number.isFinite(v)) return { error: "not a number" };
        if (type === "integer" && !Number.isInteger(v)) return { error: "must be a whole number" };
        return { value: v };
      };
    } else if (type === "boolean") {
      const initial = schema.default === true;
      control = h("input", { id, name: path, type: "checkbox", checked: initial });
      get = () => (!required && control.checked === initial ? { omit: true } : { value: control.checked });
      add(wrap, h("label", { class: "check", for: id }, control, ...labelText), desc, errorEl);
      return { el: wrap, get: withError(get, wrap, errorEl) };
    } else if (type === "array" && !Array.isArray(schema.items)) {
      return arrayField(name, schema, required, root, path, labelText, desc);
    } else if (type === "object" && schema.properties) {
      return objectField(name, schema, required, root, path, labelText, desc);
    } else if (type === "union") {
      return unionField(name, schema, alts, required, root, path, labelText, desc);
    } else {
      control = h("textarea", { id, name: path, rows: 2, spellcheck: false, placeholder: "any JSON value" });
      get = () => {
        if (blank(control.value.trim())) return required ? { error: "required (JSON)" } : { omit: true };
        try { return { value: JSON.parse(control.value) }; } catch (e) { return { error: `invalid JSON: ${e.message}` }; }
      };
    }
    add(wrap, h("label", { for: id }, ...labelText), control, desc, errorEl);
    return { el: wrap, get: withError(get, wrap, errorEl) };
  }

  function withError(get, wrap, errorEl) {
    return () => {
      const r = get();
      wrap.classList.toggle("invalid", !!r.error);
      errorEl.hidden = !r.error;
      errorEl.textContent = r.error || "";
      return r;
    };
  }

  function describeType(s, type, nullable) {
    let t = s.enum ? "enum" : type;
    if (type === "array") t = `array of ${typeOf(s.items || {})}`;
    if (s.format) t += ` (${s.format})`;
    if (s.minimum !== undefined || s.maximum !== undefined) t += ` [${s.minimum ?? ""}..${s.maximum ?? ""}]`;
    if (s.default !== undefined && s.default !== null && typeof s.default !== "object") t += ` · default ${JSON.stringify(s.default)}`;
    if (nullable) t += " · nullable";
    return t;
  }

  function placeholderFor(s) {
    if (s.default !== undefined && s.default !== null) return `default: ${typeof s.default === "string" ? s.default : JSON.stringify(s.default)}`;
    if (s.examples && s.examples.length) return `e.g. ${s.examples[0]}`;
    return "";
  }

  function autoGrow(t) {
    t.style.height = "auto";
    t.style.height = `${Math.min(t.scrollHeight + 2, 320)}px`;
  }

  function objectField(name, schema, required, root, path, labelText, desc) {
    const wrap = h("div", { class: "field", "data-field": path });
    const inner = buildObject(schema, root, path);
    const set = h("fieldset", {}, h("legend", {}, ...labelText), desc, inner.el);
    let include = null;
    if (!required) {
      const id = nextId("f");
      include = h("input", { id, type: "checkbox", name: `${path}.__include` });
      const toggle = () => { inner.el.hidden = !include.checked; };
      include.addEventListener("change", toggle);
      toggle();
      set.insertBefore(h("label", { class: "check", for: id }, include, "include"), inner.el);
    }
    add(wrap, set);
    return { el: wrap, get: () => (include && !include.checked ? { omit: true } : inner.get()) };
  }

  function buildObject(schema, root, path) {
    const req = new Set(schema.required || []);
    const fields = Object.entries(schema.properties || {}).map(([k, s]) =>
      [k, buildField(k, s, req.has(k), root, path ? `${path}.${k}` : k)]);
    const el = h("div", { class: "object" }, fields.map(([, f]) => f.el));
    return {
      el,
      get() {
        const out = {};
        let error = null;
        for (const [k, f] of fields) {
          const r = f.get();
          if (r.error) error = error || `${k}: ${r.error}`;
          else if (!r.omit) out[k] = r.value;
        }
        return error ? { error } : { value: out };
      },
    };
  }

  function arrayField(name, schema, required, root, path, labelText, desc) {
    const wrap = h("div", { class: "field", "data-field": path });
    const list = h("div", { class: "array-items" });
    const items = [];
    const addItem = () => {
      const idx = items.length;
      const f = buildField(`[${idx}]`, schema.items || {}, true, root, `${path}[${idx}]`);
      const row = h("div", { class: "array-item" }, h("div", { class: "item-body" }, f.el));
      const entry = { f, row };
      row.append(h("button", { type: "button", class: "small", title: "remove item", text: "×",
        onclick: () => { items.splice(items.indexOf(entry), 1); row.remove(); } }));
      items.push(entry);
      list.append(row);
    };
    const addBtn = h("button", { type: "button", class: "small", text: "+ add item", onclick: addItem, "data-add": path });
    add(wrap, h("fieldset", {}, h("legend", {}, ...labelText), desc, list, addBtn));
    (Array.isArray(schema.default) ? schema.default : []).forEach(() => addItem());
    return {
      el: wrap,
      get() {
        if (!items.length && !required) return { omit: true };
        const out = [];
        for (const { f } of items) {
          const r = f.get();
          if (r.error) return { error: r.error };
          if (!r.omit) out.push(r.value);
        }
        return { value: out };
      },
    };
  }

  function unionField(name, schema, alts, required, root, path, labelText, desc) {
    const wrap = h("div", { class: "field", "data-field": path });
    const id = nextId("f");
    const options = alts.map((a, i) => {
      const r = resolve(a, root);
      return h("option", { value: String(i), text: r.title || typeOf(r) });
    });
    const select = h("select", { id, name: `${path}.__variant` },
      required ? null : h("option", { value: "", text: "(unset)" }), options);
    const body = h("div", {});
    let current = null;
    const render = () => {
      body.replaceChildren();
      current = null;
      if (select.value === "") return;
      const alt = resolve(alts[Number(select.value)], root);
      if (alt.type === "null") { current = { get: () => ({ value: null }) }; return; }
      current = buildField(alt.title || typeOf(alt), alt, true, root, path);
      body.append(current.el);
    };
    select.addEventListener("change", render);
    render();
    add(wrap, h("label", { for: id }, ...labelText), select, desc, body);
    return { el: wrap, get: () => (current ? current.get() : { omit: true }) };
  }

  // -- tools panel --------------------------------------------------------------------------
  function renderTools(tools) {
    state.tools = tools;
    const box = $("#tools");
    box.replaceChildren();
    $("#tools-empty").hidden = tools.length > 0;
    $("#tool-count").textContent = tools.length ? `(${tools.length})` : "";
    for (const tool of tools) box.append(toolCard(tool, tools.length === 1));
  }

  function toolCard(tool, open) {
    const schema = tool.inputSchema || { type: "object" };
    const form = buildObject(resolve(schema, schema), schema, "");
    const rawId = nextId("raw");
    const raw = h("textarea", { id: rawId, rows: 4, spellcheck: false, hidden: true, "aria-label": `${tool.name} arguments JSON` });
    const rawToggle = h("input", { type: "checkbox", "aria-label": "edit arguments as JSON" });
    rawToggle.addEventListener("change", () => {
      if (rawToggle.checked) {
        const r = form.get();
        raw.value = JSON.stringify(r.value || {}, null, 2);
        autoGrow(raw);
      }
      raw.hidden = !rawToggle.checked;
      form.el.hidden = rawToggle.checked;
    });
    const callBtn = h("button", { type: "submit", class: "primary", text: "Call" });
    const note = h("span", { class: "hint" });
    const formEl = h("form", { "data-tool": tool.name, novalidate: true },
      tool.description ? h("p", { class: "full-desc", text: tool.description }) : null,
      form.el, raw,
      h("div", { class: "actions" }, callBtn, h("label", { class: "raw-toggle" }, rawToggle, "JSON"), note));
    formEl.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      let args;
      if (rawToggle.checked) {
        try { args = JSON.parse(raw.value || "{}"); } catch (e) { note.textContent = `invalid JSON: ${e.message}`; return; }
      } else {
        const r = form.get();
        if (r.error) { note.textContent = `fix the form: ${r.error}`; return; }
        args = r.value;
      }
      note.textContent = "";
      callBtn.disabled = true;
      try { await callTool(tool.name, args); } finally { callBtn.disabled = state.mode === "sim" && (state.done || state.truncated); }
    });
    const firstLine = (tool.description || "").split("\n")[0];
    return h("details", { class: "tool", open, "data-tool-card": tool.name },
      h("summary", {}, h("span", { class: "tool-name", text: tool.name }), h("span", { class: "tool-desc", text: firstLine })),
      formEl);
  }

  // -- acting ---------------------------------------------------------------------------------
  async function callTool(name, args) {
    clearBanner();
    try {
      let result;
      let obs = null;
      if (state.mode === "sim") {
        obs = await sim.step(name, args);
        result = obs.result;
        state.reward += obs.reward || 0;
        state.done = !!obs.done;
        state.truncated = !!obs.truncated;
        state.stepCount = (obs.info && obs.info.step) || state.stepCount + 1;
        try {
          const st = await sim.state();
          state.reward = st.cumulative_reward;
          state.stepCount = st.step_count;
        } catch (e) { /* keep the local sum */ }
      } else {
        result = await mcp.call(name, args);
        state.stepCount += 1;
      }
      const step = { index: state.steps.length, tool: name, arguments: args, result };
      if (obs) Object.assign(step, { reward: obs.reward || 0, done: !!obs.done, truncated: !!obs.truncated });
      state.steps.push(step);
      renderStep(step);
      renderStatus();
    } catch (e) {
      showBanner(e.message);
    }
  }

  function renderStep(step) {
    $("#trajectory-empty").hidden = true;
    $("#export").disabled = false;
    const isError = !!(step.result && step.result.isError);
    const pills = [];
    if (isError) pills.push(h("span", { class: "pill error", text: "error" }));
    if (step.done) pills.push(h("span", { class: "pill done", text: "done" }));
    if (step.truncated) pills.push(h("span", { class: "pill truncated", text: "truncated" }));
    const reward = step.reward === undefined ? null
      : h("span", { class: `step-reward${step.reward > 0 ? " positive" : ""}`, "data-reward": String(step.reward), text: `reward ${fmtSigned(step.reward)}` });
    const li = h("li", { class: isError ? "is-error" : "", "data-step": String(step.index) },
      h("div", { class: "step-head" }, h("span", { class: "step-n", text: `#${step.index + 1}` }),
        h("span", { class: "tool-name", text: step.tool }), ...pills, reward),
      h("pre", { class: "args", text: JSON.stringify(step.arguments, null, 2) }),
      renderResult(step.result));
    $("#trajectory").append(li);
    li.scrollIntoView({ block: "nearest" });
  }

  function renderResult(result) {
    const box = h("div", { class: "result" });
    if (!result) return box;
    for (const item of result.content || []) {
      if (item.type === "text") box.append(h("pre", { class: result.isError ? "error-text" : "", text: item.text }));
      else if (item.type === "image") box.append(h("img", { src: `data:${item.mimeType};base64,${item.data}`, alt: "image result" }));
      else if (item.type === "audio") box.append(h("audio", { controls: true, src: `data:${item.mimeType};base64,${item.data}` }));
      else if (item.type === "resource") {
        const r = item.resource || {};
        box.append(h("div", { class: "hint", text: `resource ${r.uri || ""} ${r.mimeType || ""}` }));
        if (r.text !== undefined) box.append(h("pre", { text: r.text }));
        else if (r.blob && (r.mimeType || "").startsWith("image/")) box.append(h("img", { src: `data:${r.mimeType};base64,${r.blob}`, alt: r.uri }));
      } else if (item.type === "resource_link") {
        box.append(h("div", { class: "hint" }, "resource link: ", h("code", { text: item.uri }), item.name ? ` (${item.name})` : ""));
      } else box.append(h("pre", { text: JSON.stringify(item, null, 2) }));
    }
    if (result.structuredContent !== undefined && result.structuredContent !== null) {
      box.append(h("details", { class: "structured", open: !(result.content || []).length },
        h("summary", { text: "structured content" }), h("pre", { text: JSON.stringify(result.structuredContent, null, 2) })));
    }
    return box;
  }

  const fmt = (x) => (Math.round(x * 1000) / 1000).toString();
  const fmtSigned = (x) => (x > 0 ? "+" : "") + fmt(x);

  function renderStatus() {
    const set = (sel, v, cls) => { const el = $(sel); el.textContent = v; el.className = cls || (el.classList.contains("mono") ? "mono" : ""); };
    set("#reward", fmt(state.reward), state.reward > 0 ? "positive" : "");
    const last = state.steps.length ? state.steps[state.steps.length - 1].reward : undefined;
    set("#last-reward", last === undefined ? "–" : fmtSigned(last));
    set("#done", String(state.done), state.done ? "yes" : "");
    set("#truncated", String(state.truncated), state.truncated ? "yes" : "");
    set("#steps", String(state.stepCount));
    set("#episode-id", state.episodeId || (state.mcp.session ? `session ${state.mcp.session}` : "–"), "mono");
    const mcpUrl = $("#mcp-url");
    mcpUrl.hidden = !state.mcpUrl;
    $("#mcp-url code").textContent = state.mcpUrl || "";
    if (state.mode === "sim") {
      const ended = state.done || state.truncated;
      document.querySelectorAll("#tools button[type=submit]").forEach((b) => { b.disabled = ended; });
    }
  }

  // -- reset / connect ---------------------------------------------------------------------------
  async function doReset() {
    clearBanner();
    const seedText = $("#seed").value.trim();
    const seed = seedText === "" ? null : Number(seedText);
    const taskId = $("#task").value || null;
    const btn = $("#reset");
    btn.disabled = true;
    try {
      const obs = await sim.reset(seed, taskId);
      const st = await sim.state();
      Object.assign(state, { task: obs.task, seed: st.seed, steps: [], reward: st.cumulative_reward || 0,
        done: !!st.done, truncated: !!st.truncated, stepCount: st.step_count || 0 });
      $("#prompt-box").hidden = false;
      $("#status").hidden = false;
      $("#prompt").textContent = obs.task ? obs.task.prompt : "(no task)";
      $("#task-id").textContent = obs.task ? `${obs.task.id} · seed ${st.seed}` : "";
      $("#trajectory").replaceChildren();
      $("#trajectory-empty").hidden = false;
      $("#export").disabled = true;
      renderTools(obs.tools || []);
      renderStatus();
    } catch (e) {
      showBanner(e.message);
    } finally {
      btn.disabled = false;
    }
  }

  async function doConnect() {
    clearBanner();
    try {
      const { init, tools } = await mcp.connect();
      $("#prompt-box").hidden = !(init.instructions);
      $("#prompt").textContent = init.instructions || "";
      $("#task-id").textContent = init.serverInfo ? `${init.serverInfo.name} · MCP ${state.mcp.protocol}` : "";
      $("#status").hidden = false;
      state.steps = [];
      state.stepCount = 0;
      $("#trajectory").replaceChildren();
      renderTools(tools);
      renderStatus();
      $("#connect").textContent = "Reconnect";
    } catch (e) {
      showBanner(e.message);
    }
  }

  function exportJson() {
    const data = {
      format: "openenv-mcp.playground/1",
      env: state.info && state.info.env, mode: state.mode, exported_at: new Date().toISOString(),
      episode_id: state.episodeId, seed: state.seed,
      task: state.task ? { id: state.task.id, prompt: state.task.prompt } : null,
      tools: state.tools,
      steps: state.steps,
      reward: state.mode === "sim" ? state.reward : undefined,
      done: state.mode === "sim" ? state.done : undefined,
      truncated: state.mode === "sim" ? state.truncated : undefined,
    };
    const text = JSON.stringify(data, null, 2);
    const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
    const a = h("a", { href: url, download: `trajectory-${state.episodeId || "mcp"}.json` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
    window.__lastExport = data;
  }

  function showBanner(msg) { const b = $("#banner"); b.textContent = msg; b.hidden = false; }
  function clearBanner() { $("#banner").hidden = true; }

  // -- start -------------------------------------------------------------------------------------
  async function start() {
    const tokenInput = $("#token");
    tokenInput.value = state.token;
    tokenInput.addEventListener("change", () => {
      state.token = tokenInput.value.trim();
      sessionStorage.setItem("openenv-mcp-token", state.token);
      if (!state.info) start();
    });
    $("#reset").addEventListener("click", doReset);
    $("#connect").addEventListener("click", doConnect);
    $("#export").addEventListener("click", exportJson);
    window.addEventListener("pagehide", () => { if (state.mode === "sim") sim.close(); });
    try {
      state.info = await api("GET", "playground/info");
    } catch (e) {
      showBanner(e.message);
      return;
    }
    clearBanner();
    const info = state.info;
    state.mode = info.mode;
    if (info.auth) $("#token-box").hidden = false;
    $("#env-name").textContent = info.env;
    document.title = `${info.env} · openenv-mcp playground`;
    const badge = $("#mode");
    badge.textContent = info.mode;
    badge.classList.add(info.mode);
    const select = $("#task");
    for (const t of info.tasks || []) {
      const text = `${t.id} — ${t.prompt}`;
      select.append(h("option", { value: t.id, text: text.length > 90 ? `${text.slice(0, 89)}…` : text }));
    }
    if (info.mode === "prod") {
      $("#sim-controls").hidden = true;
      $("#prod-controls").hidden = false;
      $("#episode-title").textContent = "MCP server";
      for (const id of ["#reward", "#last-reward", "#done", "#truncated"]) $(id).parentElement.hidden = true;
      $("#tools-empty").textContent = "Connect to list the server's tools.";
      await doConnect();
    }
    document.body.dataset.ready = "1";
  }

  start();
})();
