// The report's sample browser (docs/report.md, "Samples"): the rows behind every number.
// Each methodology and model's rows are a script file, samples/<methodology>/<model>.js, that
// calls genfairSamples({...}); it is loaded when a reader first asks for them (a page opened
// from disk may load a script, not fetch() a file). At most PAGE rows are in the page at once.
// Every text from a model or a dataset goes in through textContent, never as markup.
"use strict";
(function () {
  const PAGE = 50;
  const SHOWN = 160; // characters of an answer in the table (the row's details show it all)
  const FIELDS = ["probe_id", "status", "attempts", "label"];
  const index = JSON.parse(document.getElementById("samples-index").textContent);
  const byKey = new Map(index.map((e) => [e.methodology + "/" + e.model, e]));
  const loaded = new Map(); // key -> table
  const state = { methodology: "", model: "", status: "", groups: {}, q: "", page: 0, open: -1 };
  const $ = (id) => document.getElementById(id);
  // a format character (bidi override, zero-width space...) shown escaped, as
  // genfair.logs.shown does for the rest of the report: "gender \u202e99.0" cannot reorder
  const shown = (text) =>
    String(text).replace(/\p{Cf}/gu, (c) => {
      const hex = c.codePointAt(0).toString(16);
      return hex.length > 4 ? "\\U" + hex.padStart(8, "0") : "\\u" + hex.padStart(4, "0");
    });
  const el = (tag, text, cls) => {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = shown(text);
    if (cls) node.className = cls;
    return node;
  };

  // ---- a loaded file: column-wise, a column as levels + codes or as values
  function table(data) {
    const columns = {};
    for (const [name, col] of Object.entries(data.columns)) {
      columns[name] = col.codes
        ? { levels: col.levels, codes: col.codes, get: (i) => col.levels[col.codes[i]] }
        : { values: col.values, get: (i) => col.values[i] };
    }
    const entry = byKey.get(data.methodology + "/" + data.model);
    return { n: data.n, columns, groups: entry.groups, lower: {} };
  }
  window.genfairSamples = function (data) {
    const key = data.methodology + "/" + data.model;
    if (byKey.has(key) && !loaded.has(key)) loaded.set(key, table(data));
  };
  function load(entry, done) {
    const key = entry.methodology + "/" + entry.model;
    if (loaded.has(key)) return done();
    $("sb-info").textContent = "Loading " + entry.src + " (" + entry.rows + " rows)…";
    const script = document.createElement("script");
    script.src = entry.src;
    script.onload = done;
    script.onerror = () => {
      $("sb-info").textContent =
        "Could not load " + entry.src + ": the samples folder must stay next to this report.";
    };
    document.head.appendChild(script);
  }

  // ---- filtering: status, groups (equal), search (case-insensitive substring)
  function lowered(t, name) {
    if (!t.lower[name]) {
      const col = t.columns[name];
      const src = col.levels || col.values;
      t.lower[name] = src.map((v) => (v === null ? "" : String(v).toLowerCase()));
    }
    return t.lower[name];
  }
  function matcher(t, name, test) {
    // a per-row test of column `name`; levels are tested once each
    const col = t.columns[name];
    if (!col) return () => false;
    if (col.levels) {
      const hit = col.levels.map(test);
      return (i) => hit[col.codes[i]];
    }
    const values = col.values;
    return (i) => test(values[i]);
  }
  function rowsOf(t) {
    const tests = [];
    if (state.status) tests.push(matcher(t, "status", (v) => v === state.status));
    for (const [g, value] of Object.entries(state.groups)) {
      if (value !== "" && t.columns[g]) tests.push(matcher(t, g, (v) => v === value));
    }
    const q = state.q.trim().toLowerCase();
    if (q) {
      const searched = ["probe_id", "prompt", "answer", "label", ...t.groups].filter(
        (c) => t.columns[c],
      );
      const anyOf = searched.map((c) => {
        const low = lowered(t, c);
        const col = t.columns[c];
        if (col.levels) {
          const hit = low.map((s) => s.includes(q));
          return (i) => hit[col.codes[i]];
        }
        return (i) => low[i].includes(q);
      });
      tests.push((i) => anyOf.some((f) => f(i)));
    }
    const out = [];
    for (let i = 0; i < t.n; i++) if (tests.every((f) => f(i))) out.push(i);
    return out;
  }

  // ---- controls
  function fill(select, values, chosen, all) {
    select.replaceChildren();
    if (all !== undefined) select.appendChild(new Option(all, ""));
    for (const v of values) select.appendChild(new Option(v, v));
    select.value = values.includes(chosen) ? chosen : all !== undefined ? "" : values[0] || "";
    return select.value;
  }
  function entry() {
    return byKey.get(state.methodology + "/" + state.model);
  }
  function controls(t) {
    const methodologies = [...new Set(index.map((e) => e.methodology))];
    state.methodology = fill($("sb-methodology"), methodologies, state.methodology);
    const models = index.filter((e) => e.methodology === state.methodology).map((e) => e.model);
    state.model = fill($("sb-model"), models, state.model);
    const e = entry();
    state.status = fill($("sb-status"), e ? Object.keys(e.statuses) : [], state.status, "any");
    const box = $("sb-groups");
    box.replaceChildren();
    const groups = {};
    for (const g of t ? t.groups : []) {
      const col = t.columns[g];
      const levels = [...new Set(col.levels || col.values)].filter((v) => v !== null).sort();
      const label = el("label", g + " ");
      const select = el("select");
      select.dataset.group = g;
      groups[g] = fill(select, levels, state.groups[g] || "", "any");
      select.addEventListener("change", () => {
        state.groups[g] = select.value;
        state.page = 0;
        state.open = -1;
        show();
      });
      label.appendChild(select);
      box.appendChild(label);
    }
    if (t) state.groups = groups;
    if ($("sb-search").value !== state.q) $("sb-search").value = state.q;
  }

  // ---- the table and the opened row
  function cell(tr, text, cls) {
    const td = el("td", text === null || text === undefined ? "–" : text, cls);
    tr.appendChild(td);
    return td;
  }
  function render(t) {
    const rows = rowsOf(t);
    const pages = Math.max(1, Math.ceil(rows.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    const first = state.page * PAGE;
    const shown = rows.slice(first, first + PAGE);
    const hasImages = t.columns.image && (t.columns.image.levels || t.columns.image.values).some((v) => v);
    const head = [...FIELDS, ...t.groups, "answer"].concat(hasImages ? ["image"] : []);
    const thead = $("sb-table").tHead;
    thead.replaceChildren();
    const hr = thead.insertRow();
    for (const h of ["#", ...head]) hr.appendChild(el("th", h));
    const body = $("sb-table").tBodies[0];
    body.replaceChildren();
    for (const i of shown) {
      const tr = body.insertRow();
      tr.dataset.row = String(i);
      tr.tabIndex = 0;
      if (i === state.open) tr.className = "open";
      cell(tr, i + 1, "num");
      for (const c of [...FIELDS, ...t.groups]) cell(tr, t.columns[c] ? t.columns[c].get(i) : null);
      const answer = t.columns.answer ? t.columns.answer.get(i) : null;
      cell(tr, answer && answer.length > SHOWN ? answer.slice(0, SHOWN) + "…" : answer, "answer");
      if (hasImages) {
        const td = cell(tr, "");
        const src = t.columns.image.get(i);
        if (src) {
          const img = el("img", null, "thumb");
          img.loading = "lazy";
          img.alt = "image of row " + (i + 1);
          img.src = src;
          td.appendChild(img);
        }
      }
    }
    $("sb-info").textContent =
      rows.length === 0
        ? "No row matches."
        : "Rows " + (first + 1) + "–" + (first + shown.length) + " of " + rows.length +
          (rows.length < t.n ? " matching (" + t.n + " in all)" : "") + ". Click a row to open it.";
    $("sb-page").textContent = "page " + (state.page + 1) + " of " + pages;
    $("sb-prev").disabled = state.page === 0;
    $("sb-next").disabled = state.page >= pages - 1;
    detail(t);
  }
  function detail(t) {
    const box = $("sb-detail");
    box.replaceChildren();
    box.hidden = state.open < 0 || state.open >= t.n;
    if (box.hidden) return;
    const i = state.open;
    box.appendChild(el("h3", "Row " + (i + 1) + ": " + (t.columns.probe_id.get(i) || "")));
    const dl = el("dl");
    for (const c of ["status", "attempts", "label", ...t.groups]) {
      if (!t.columns[c]) continue;
      dl.appendChild(el("dt", c));
      dl.appendChild(el("dd", t.columns[c].get(i) ?? "–"));
    }
    box.appendChild(dl);
    const prompt = t.columns.prompt ? t.columns.prompt.get(i) : null;
    const fold = el("details");
    fold.appendChild(el("summary", prompt === null ? "prompt: none recorded" : "prompt (" + prompt.length + " characters)"));
    fold.appendChild(el("pre", prompt ?? ""));
    box.appendChild(fold);
    box.appendChild(el("h4", "raw answer"));
    box.appendChild(el("pre", t.columns.answer ? t.columns.answer.get(i) ?? "–" : "–", "raw"));
    const src = t.columns.image ? t.columns.image.get(i) : null;
    if (src) {
      const img = el("img", null, "large");
      img.alt = "image of row " + (i + 1);
      img.src = src;
      box.appendChild(img);
    }
  }

  // ---- state <-> #samples/<methodology>/<model>?status=..&q=..&<group>=..
  function hash() {
    const query = new URLSearchParams();
    if (state.status) query.set("status", state.status);
    if (state.q) query.set("q", state.q);
    for (const [g, v] of Object.entries(state.groups)) if (v) query.set(g, v);
    const q = query.toString();
    return "#samples/" + encodeURIComponent(state.methodology) + "/" +
      encodeURIComponent(state.model) + (q ? "?" + q : "");
  }
  function fromHash(text) {
    const m = /^#samples\/([^/?]*)\/([^/?]*)(?:\?(.*))?$/.exec(text);
    if (!m) return false;
    const query = new URLSearchParams(m[3] || "");
    state.methodology = decodeURIComponent(m[1]);
    state.model = decodeURIComponent(m[2]);
    state.status = query.get("status") || "";
    state.q = query.get("q") || "";
    state.groups = {};
    for (const [k, v] of query) if (k !== "status" && k !== "q") state.groups[k] = v;
    state.page = 0;
    state.open = -1;
    return true;
  }
  function show(scroll) {
    const e = entry();
    if (!e) {
      const asked = state.methodology + "/" + state.model;
      controls(null);
      $("sb-info").textContent = index.length
        ? "This study has no rows of " + asked + "; choose a methodology and a model."
        : "No samples in this study.";
      return;
    }
    load(e, () => {
      const t = loaded.get(e.methodology + "/" + e.model);
      if (!t) return;
      controls(t);
      render(t);
      history.replaceState(null, "", hash());
      if (scroll) $("samples").scrollIntoView();
    });
  }

  // ---- events
  function changed(reset) {
    reset();
    state.page = 0;
    state.open = -1;
    show();
  }
  $("sb-methodology").addEventListener("change", (ev) =>
    changed(() => { state.methodology = ev.target.value; state.groups = {}; state.status = ""; }));
  $("sb-model").addEventListener("change", (ev) => changed(() => { state.model = ev.target.value; }));
  $("sb-status").addEventListener("change", (ev) => changed(() => { state.status = ev.target.value; }));
  $("sb-search").addEventListener("input", (ev) => changed(() => { state.q = ev.target.value; }));
  $("sb-prev").addEventListener("click", () => { state.page -= 1; state.open = -1; show(); });
  $("sb-next").addEventListener("click", () => { state.page += 1; state.open = -1; show(); });
  const open = (ev) => {
    const tr = ev.target.closest("tr[data-row]");
    if (!tr) return;
    state.open = Number(tr.dataset.row);
    show();
    $("sb-detail").scrollIntoView({ block: "nearest" });
  };
  $("sb-table").addEventListener("click", open);
  $("sb-table").addEventListener("keydown", (ev) => { if (ev.key === "Enter") open(ev); });
  document.addEventListener("click", (ev) => {
    const a = ev.target.closest("a.samples-link");
    if (!a) return;
    ev.preventDefault();
    if (fromHash(a.hash)) show(true);
  });
  window.addEventListener("hashchange", () => { if (fromHash(location.hash)) show(true); });
  $("sb-load").addEventListener("click", () => show());
  // nothing is loaded until a reader asks: a link, a choice, the button, or a #samples/ address
  if (fromHash(location.hash)) show(true);
  else {
    controls(null);
    $("sb-info").textContent = index.length
      ? "Choose a methodology and a model, or follow a link of a section or a headline number."
      : "No samples in this study.";
  }
})();
