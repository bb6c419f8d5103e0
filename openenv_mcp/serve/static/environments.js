// The landing page: fill the table from /environments.json (text only: never innerHTML of server data).
"use strict";
(async () => {
  const status = document.getElementById("status");
  const body = document.querySelector("#envs tbody");
  let entries;
  try {
    const res = await fetch("/environments.json");
    if (!res.ok) throw new Error("HTTP " + res.status);
    entries = await res.json();
  } catch (e) {
    status.textContent = "could not load the environments: " + e.message;
    return;
  }
  for (const e of entries) {
    const row = body.insertRow();
    const cell = (text) => { const c = row.insertCell(); c.textContent = text; return c; };
    cell(e.name);
    cell(e.description || "");
    cell(e.tasks === null ? "-" : String(e.tasks));
    cell(e.boundaries.join(", "));
    cell(e.error ? "error: " + e.error : e.conformance.status);
    const play = row.insertCell();
    if (e.served) {
      const a = document.createElement("a");
      a.href = "/";
      a.textContent = "play it here";
      play.appendChild(a);
    } else {
      const code = document.createElement("code");
      code.textContent = e.play;
      play.appendChild(code);
    }
  }
  status.textContent = entries.length + " environments";
})();
