// schemakit registry UI: plain JavaScript over the registry's JSON API (Confluent's, plus /ui/api/ helpers).
// Pages are chosen by the location hash: #/ (subjects), #/s/NAME (a subject), #/s/NAME/diff?old=&new=,
// #/s/NAME/new and #/new (test and register a version), #/settings (global config and mode), #/exporters
// (schema exporters: state, lag, last error; pause and resume), #/keys (the DEK registry's KEKs) and #/keys/NAME
// (a KEK's DEKs: subjects, algorithms, versions; never any key material).
"use strict";

const LEVELS = ["BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE"];
const MODES = ["READWRITE", "READONLY", "IMPORT"];
const TYPES = ["AVRO", "JSON", "PROTOBUF"];
const JSON_TYPE = "application/vnd.schemaregistry.v1+json";

// ---- small helpers -------------------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "html") el.innerHTML = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

const enc = encodeURIComponent;
const main = () => document.getElementById("main");

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.code = body && body.error_code;
  }
}

async function api(method, path, body, retried) {
  const init = { method, headers: { Accept: JSON_TYPE }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = JSON_TYPE;
    init.body = JSON.stringify(body);
  }
  // An absolute URL: a page opened with credentials in its address (user:password@host) has a base that
  // fetch refuses.
  const resp = await fetch(location.origin + path, init);
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { message: text }; }
  if (resp.status === 401 && path.startsWith("/ui/api/") && !retried) {
    // Not signed in: an API route answers with the registry's challenge, on which the browser asks for
    // credentials (basic authentication) and then sends them with every request.
    const signIn = await fetch(location.origin + "/config", { headers: { Accept: JSON_TYPE }, credentials: "same-origin" });
    if (signIn.ok) return api(method, path, body, true);
  }
  if (!resp.ok) {
    // A write refused for lack of rights: stop offering writes (the API decides; this only follows it).
    if (method !== "GET" && (resp.status === 401 || resp.status === 403)) setWritable(false);
    throw new ApiError(resp.status, data);
  }
  return data;
}

function setWritable(canWrite, principal, mode) {
  document.body.classList.toggle("readonly", !canWrite);
  const who = document.getElementById("who");
  const parts = [];
  if (principal) parts.push(`signed in as ${principal}`);
  if (mode && mode !== "READWRITE") parts.push(`mode ${mode}`);
  if (!canWrite) parts.push("read-only");
  who.textContent = parts.join(" · ");
}

async function probeAccess(subject) {
  try {
    const me = await api("GET", "/ui/api/whoami" + (subject ? `?subject=${enc(subject)}` : ""));
    setWritable(me.canWrite, me.principal, me.mode);
  } catch (e) {
    setWritable(false);
  }
}

function notice(kind, text) {
  return h("div", { class: `notice ${kind}`, role: kind === "bad" ? "alert" : "status" }, text);
}

// Replaces an element's children; null and false stand for "nothing here".
function fill(el, ...nodes) {
  el.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined && n !== false));
}

function show(...nodes) {
  fill(main(), ...nodes);
}

function hashQuery() {
  const hash = location.hash.slice(1) || "/";
  const q = hash.indexOf("?");
  return { path: q < 0 ? hash : hash.slice(0, q), params: new URLSearchParams(q < 0 ? "" : hash.slice(q + 1)) };
}

function select(id, label, values, current, extra) {
  return h("label", { for: id }, label,
    h("select", { id, ...extra }, values.map(([v, text]) => h("option", { value: v, selected: v === current }, text))));
}

function fmtTime(ms) {
  return ms > 0 ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "";
}

// ---- schema text: pretty-printing and highlighting -------------------------------------------------------

// The layout of `schemakit registry get/diff` (schemakit/output.py): the top object, every list of objects
// (Avro fields) and every object of objects (JSON Schema properties) one member a line, anything else on one
// line when it fits, so a diff shows the fields that changed. Protobuf is shown as stored (a field a line).
function pretty(type, text) {
  if (type === "PROTOBUF") return text.replace(/\n$/, "");
  try { return prettyJson(JSON.parse(text)); } catch (e) { return text; }
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

function flatJson(v) {
  if (Array.isArray(v)) return "[" + v.map(flatJson).join(", ") + "]";
  if (isObject(v)) return "{" + Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${flatJson(x)}`).join(", ") + "}";
  return JSON.stringify(v);
}

function prettyJson(v, width = 100, indent = 0) {
  const flat = flatJson(v);
  if (v === null || typeof v !== "object" || Object.keys(v).length === 0) return flat;
  const members = Array.isArray(v) ? v : Object.values(v);
  if (indent > 0 && !members.every(isObject) && indent + flat.length <= width) return flat;
  const pad = " ".repeat(indent + 2);
  const items = Array.isArray(v) ? v.map((x) => pad + prettyJson(x, width, indent + 2))
    : Object.entries(v).map(([k, x]) => `${pad}${JSON.stringify(k)}: ${prettyJson(x, width, indent + 2)}`);
  const [open, close] = Array.isArray(v) ? ["[", "]"] : ["{", "}"];
  return `${open}\n${items.join(",\n")}\n${" ".repeat(indent)}${close}`;
}

const esc = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const JSON_TOKENS = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;
const PROTO_TOKENS = new RegExp([
  String.raw`(\/\/[^\n]*|\/\*[\s\S]*?\*\/)`,
  String.raw`("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')`,
  String.raw`\b(syntax|package|import|option|message|enum|oneof|map|repeated|optional|required|reserved|service|rpc|returns|extend|extensions|to|max|stream|public|weak)\b`,
  String.raw`\b(double|float|int32|int64|uint32|uint64|sint32|sint64|fixed32|fixed64|sfixed32|sfixed64|bool|string|bytes)\b`,
  String.raw`\b(\d+)\b`,
].join("|"), "g");

function highlight(type, text) {
  const re = type === "PROTOBUF" ? PROTO_TOKENS : JSON_TOKENS;
  let out = "";
  let last = 0;
  for (const m of text.matchAll(re)) {
    out += esc(text.slice(last, m.index));
    last = m.index + m[0].length;
    let cls;
    if (type === "PROTOBUF") cls = m[1] ? "c" : m[2] ? "s" : m[3] ? "kw" : m[4] ? "t" : "n";
    else if (m[1]) {
      out += m[2] ? `<span class="k">${esc(m[1])}</span>${esc(m[2])}` : `<span class="s">${esc(m[1])}</span>`;
      continue;
    } else cls = m[3] ? "l" : "n";
    out += `<span class="${cls}">${esc(m[0])}</span>`;
  }
  return out + esc(text.slice(last));
}

function codeBlock(type, text, label) {
  return h("pre", { class: "code", tabindex: "0", "aria-label": label, html: highlight(type, pretty(type, text)) });
}

// ---- line diff (longest common subsequence; schemas are small) -------------------------------------------

// Lines compare without a trailing comma: a field followed by a new one is the same field.
function diffLines(a, b) {
  const n = a.length, m = b.length;
  const key = (line) => line.replace(/,\s*$/, "");
  const ka = a.map(key), kb = b.map(key);
  const dp = Array.from({ length: n + 1 }, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      dp[i][j] = ka[i] === kb[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
  const rows = [];
  let i = 0, j = 0, dels = [], inss = [];
  const flush = () => {
    for (let k = 0; k < Math.max(dels.length, inss.length); k++) rows.push({ old: dels[k], new: inss[k] });
    dels = []; inss = [];
  };
  while (i < n || j < m) {
    if (i < n && j < m && ka[i] === kb[j]) {
      flush();
      rows.push({ old: { n: i + 1, text: a[i] }, new: { n: j + 1, text: b[j] }, same: true });
      i++; j++;
    } else if (j >= m || (i < n && dp[i + 1][j] >= dp[i][j + 1])) {
      dels.push({ n: i + 1, text: a[i] }); i++;
    } else {
      inss.push({ n: j + 1, text: b[j] }); j++;
    }
  }
  flush();
  return rows;
}

// ---- pages ----------------------------------------------------------------------------------------------

async function subjectsPage(params) {
  probeAccess("");
  const q = params.get("q") || "";
  const type = params.get("type") || "";
  const level = params.get("compatibility") || "";
  const deleted = params.get("deleted") || "exclude";
  const offset = Math.max(0, parseInt(params.get("offset") || "0", 10) || 0);
  const limit = 50;
  const list = h("div", { id: "subject-list", "aria-live": "polite" });
  const search = h("input", { id: "search", type: "search", value: q, placeholder: "part of a name",
    "aria-label": "Search subjects", autocomplete: "off" });
  const form = h("form", { class: "filters", role: "search", onsubmit: (e) => e.preventDefault() },
    h("label", { for: "search" }, "Search (press /)", search),
    select("filter-type", "Type", [["", "any"], ...TYPES.map((t) => [t, t])], type),
    select("filter-compatibility", "Compatibility", [["", "any"], ...LEVELS.map((l) => [l, l])], level),
    select("filter-deleted", "Deleted subjects", [["exclude", "hide"], ["include", "show"], ["only", "only"]], deleted));
  show(h("h1", {}, "Subjects"), form, list);

  const apply = (newOffset) => {
    const p = new URLSearchParams();
    const val = (id) => document.getElementById(id).value;
    if (val("search")) p.set("q", val("search"));
    if (val("filter-type")) p.set("type", val("filter-type"));
    if (val("filter-compatibility")) p.set("compatibility", val("filter-compatibility"));
    if (val("filter-deleted") !== "exclude") p.set("deleted", val("filter-deleted"));
    if (newOffset) p.set("offset", String(newOffset));
    history.replaceState(null, "", "#/" + (p.toString() ? "?" + p : ""));
    load(p);
  };
  let timer = null;
  search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => apply(0), 200); });
  form.addEventListener("change", (e) => { if (e.target.tagName === "SELECT") apply(0); });

  let latestLoad = 0;
  async function load(p) {
    const query = new URLSearchParams(p);
    query.set("limit", String(limit));
    const seq = ++latestLoad;
    let page;
    try {
      page = await api("GET", "/ui/api/subjects?" + query);
    } catch (e) {
      if (seq === latestLoad) list.replaceChildren(notice("bad", e.message));
      return;
    }
    if (seq !== latestLoad) return;  // a later search or filter is under way: its answer wins
    const from = page.total ? page.offset + 1 : 0;
    const to = page.offset + page.subjects.length;
    fill(list,
      page.subjects.length === 0 ? h("p", { class: "muted" }, "No subject matches.") :
        h("table", { id: "subjects" },
          h("thead", {}, h("tr", {}, ["Subject", "Type", "Latest", "Versions", "Id", "Compatibility", "Mode"]
            .map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, page.subjects.map((s) => h("tr", { "data-subject": s.subject },
            h("td", {}, h("a", { href: `#/s/${enc(s.subject)}` }, s.subject),
              s.deleted ? h("span", { class: "badge deleted" }, "deleted") : null),
            h("td", {}, s.schemaType), h("td", {}, String(s.latestVersion)), h("td", {}, String(s.versions)),
            h("td", {}, String(s.id)), h("td", {}, s.compatibility), h("td", {}, s.mode))))),
      h("div", { class: "pager" },
        h("span", { id: "page-info" }, `${from}–${to} of ${page.total}`),
        h("button", { type: "button", disabled: page.offset === 0,
          onclick: () => apply(Math.max(0, page.offset - limit)) }, "Previous"),
        h("button", { type: "button", disabled: to >= page.total, onclick: () => apply(page.offset + limit) }, "Next")));
  }
  const initial = new URLSearchParams(params);
  if (offset) initial.set("offset", String(offset));
  load(initial);
}

async function loadSubject(subject) {
  return api("GET", `/ui/api/subjects/${enc(subject)}`);
}

async function subjectPage(subject, params) {
  probeAccess(subject);
  const data = await loadSubject(subject);
  const versions = data.versions;
  const wanted = parseInt(params.get("v") || "", 10);
  const current = versions.find((v) => v.version === wanted) || versions.filter((v) => !v.deleted).pop()
    || versions[versions.length - 1];
  const base = `#/s/${enc(subject)}`;
  const timeline = h("ol", { class: "timeline", "aria-label": "Versions, newest first" },
    [...versions].reverse().map((v) => h("li", { class: v === current ? "current" : null },
      h("a", { href: `${base}?v=${v.version}`, "aria-current": v === current ? "true" : null },
        `Version ${v.version}`, v.deleted ? h("span", { class: "badge deleted" }, "deleted") : null,
        h("small", {}, `id ${v.id} · ${v.schemaType}`), h("small", {}, fmtTime(v.timestamp))))));
  const numbers = versions.map((v) => v.version);
  // by default: this version against the one before it (the first version: against the one after it)
  const older = numbers.filter((n) => n < current.version).pop();
  const newer = numbers.find((n) => n > current.version);
  const [cmpOld, cmpNew] = older ? [older, current.version] : [current.version, newer || current.version];
  const pick = (id, label, value) => select(id, label, numbers.map((n) => [String(n), `version ${n}`]), String(value));
  const compare = h("form", { class: "row", onsubmit: (e) => {
    e.preventDefault();
    location.hash = `${base}/diff?old=${document.getElementById("cmp-old").value}&new=${document.getElementById("cmp-new").value}`;
  } }, pick("cmp-old", "Old", cmpOld), pick("cmp-new", "New", cmpNew),
  h("button", { type: "submit" }, "Compare"));

  const refLink = (r) => h("a", { href: `#/s/${enc(r.subject)}?v=${r.version}` }, `${r.subject} version ${r.version}`);
  show(
    h("h1", {}, subject),
    h("div", {}, h("span", { class: "badge", title: "effective compatibility level" }, data.compatibility),
      h("span", { class: "badge", title: "effective mode" }, data.mode),
      h("a", { class: "write", href: `${base}/new` }, "Test a new version")),
    h("div", { class: "layout" },
      h("nav", { "aria-label": "Versions" }, h("h2", {}, "Versions"), timeline),
      h("section", { "aria-label": `Version ${current.version}` },
        h("h2", { id: "version-title" }, `Version ${current.version} · id ${current.id} · ${current.schemaType}`,
          current.deleted ? " · soft-deleted" : ""),
        codeBlock(current.schemaType, current.schema, `Schema of version ${current.version}`),
        h("h2", {}, "References"),
        current.references.length ? h("ul", { class: "plain", id: "references" }, current.references.map((r) =>
          h("li", {}, h("code", {}, r.name), " → ", refLink(r)))) : h("p", { class: "muted" }, "None."),
        h("h2", {}, "Referenced by"),
        current.referencedBy.length ? h("ul", { class: "plain", id: "referenced-by" }, current.referencedBy.map((r) =>
          h("li", {}, refLink(r), ` (id ${r.id})`))) : h("p", { class: "muted" }, "No schema references it."),
        h("h2", {}, "Compare two versions"), compare,
        await subjectSettings(subject))));
}

async function settingsForm(scope, subject) {
  // A subject's own config and mode (or the global ones); the effective value is shown when it has none.
  const path = subject ? `/${enc(subject)}` : "";
  const config = await api("GET", `/config${path}?defaultToGlobal=true`).catch(() => ({}));
  const own = subject ? await api("GET", `/config${path}`).catch(() => null) : config;
  const mode = await api("GET", `/mode${path}?defaultToGlobal=true`).catch(() => ({}));
  const status = h("div", { "aria-live": "polite" });
  const levelSel = select(`${scope}-level`, "Compatibility", LEVELS.map((l) => [l, l]), config.compatibilityLevel);
  const modeSel = select(`${scope}-mode`, "Mode", MODES.map((m) => [m, m]), mode.mode);
  const save = async (what) => {
    status.replaceChildren();
    try {
      if (what === "config") {
        const level = document.getElementById(`${scope}-level`).value;
        await api("PUT", `/config${path}`, { compatibility: level });
        status.append(notice("ok", `Compatibility set to ${level}.`));
      } else {
        const m = document.getElementById(`${scope}-mode`).value;
        await api("PUT", `/mode${path}`, { mode: m });
        status.append(notice("ok", `Mode set to ${m}.`));
      }
    } catch (e) {
      status.append(notice("bad", e.message));
    }
  };
  return h("div", {},
    h("p", { class: "muted" }, subject ? (own ? "This subject has its own compatibility level." :
      "No level of its own: the global one applies.") : ""),
    h("div", { class: "row" }, levelSel,
      h("button", { type: "button", class: "write", onclick: () => save("config") }, "Save compatibility"),
      modeSel, h("button", { type: "button", class: "write", onclick: () => save("mode") }, "Save mode")),
    status);
}

async function subjectSettings(subject) {
  return h("section", { "aria-label": "Subject settings" }, h("h2", {}, "Subject settings"),
    await settingsForm("subject", subject));
}

async function settingsPage() {
  probeAccess("");
  show(h("h1", {}, "Global settings"), await settingsForm("global", null));
}

// ---- schema exporters --------------------------------------------------------------------------------------

function fmtLag(s) {
  if (s.lagRecords === 0) return "caught up";
  const secs = s.lagSeconds >= 1 ? `, ${s.lagSeconds.toFixed(1)} s` : "";
  return `${s.lagRecords} record${s.lagRecords === 1 ? "" : "s"}${secs}`;
}

// The page shows live figures: it reads them again every two seconds while it is the page shown.
let exportersRefresh = null;

async function exportersPage() {
  clearTimeout(exportersRefresh);
  probeAccess("");
  const names = await api("GET", "/exporters");
  const rows = await Promise.all(names.map(async (name) => {
    const [info, st] = await Promise.all([
      api("GET", `/exporters/${enc(name)}`),
      api("GET", `/exporters/${enc(name)}/status`).catch((e) => ({ state: "UNKNOWN", lastError: e.message })),
    ]);
    return { name, info, st };
  }));
  const status = h("div", { "aria-live": "polite" });
  const act = async (name, what) => {
    try {
      await api("PUT", `/exporters/${enc(name)}/${what}`);
      await exportersPage();
    } catch (e) {
      clearTimeout(exportersRefresh);  // keep the message on the page
      status.replaceChildren(notice("bad", e.message));
    }
  };
  const table = h("table", { class: "exporters" },
    h("thead", {}, h("tr", {}, ["Exporter", "Destination", "Subjects", "State", "Offset", "Lag", "Last error", ""]
      .map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows.map(({ name, info, st }) => h("tr", { "data-exporter": name },
      h("td", {}, name),
      h("td", {}, info.config["schema.registry.url"] || "",
        h("div", { class: "muted" }, `${info.contextType} ${info.context} · ${info.subjectRenameFormat}`)),
      h("td", {}, info.subjects.join(", ")),
      h("td", {}, h("span", { class: `badge state-${st.state.toLowerCase()}` }, st.state)),
      h("td", {}, String(st.offset ?? ""), h("div", { class: "muted" }, fmtTime(st.ts))),
      h("td", { class: "lag" }, st.lagRecords === undefined ? "" : fmtLag(st)),
      h("td", { class: "last-error" }, st.lastError || "",
        h("div", { class: "muted" }, st.lastErrorTs ? fmtTime(st.lastErrorTs) : "")),
      h("td", {}, st.state === "PAUSED"
        ? h("button", { type: "button", class: "write", onclick: () => act(name, "resume") }, "Resume")
        : h("button", { type: "button", class: "write", onclick: () => act(name, "pause") }, "Pause"))))));
  show(h("h1", {}, "Exporters"),
    h("p", { class: "muted" }, "Schema exporters copy this registry's schemas to another one as they change " +
      "(Confluent's schema linking). Lag is counted in _schemas records and in seconds; the page refreshes every 2 s."),
    names.length ? table : h("p", {}, "No exporters. Create one with POST /exporters."),
    status);
  exportersRefresh = setTimeout(() => {
    if (hashQuery().path === "/exporters") exportersPage().catch(() => {});
  }, 2000);
}

async function diffPage(subject, params) {
  probeAccess(subject);
  const data = await loadSubject(subject);
  const byNumber = new Map(data.versions.map((v) => [v.version, v]));
  const oldV = byNumber.get(parseInt(params.get("old"), 10));
  const newV = byNumber.get(parseInt(params.get("new"), 10));
  const base = `#/s/${enc(subject)}`;
  if (!oldV || !newV) {
    show(h("h1", {}, subject), notice("bad", "Choose two versions of this subject."), h("a", { href: base }, "Back"));
    return;
  }
  const nums = data.versions.map((v) => [String(v.version), `version ${v.version}`]);
  const form = h("form", { class: "row", onsubmit: (e) => {
    e.preventDefault();
    location.hash = `${base}/diff?old=${document.getElementById("diff-old").value}&new=${document.getElementById("diff-new").value}`;
  } }, select("diff-old", "Old", nums, String(oldV.version)), select("diff-new", "New", nums, String(newV.version)),
  h("button", { type: "submit" }, "Compare"));
  const rows = diffLines(pretty(oldV.schemaType, oldV.schema).split("\n"), pretty(newV.schemaType, newV.schema).split("\n"));
  const cell = (side, kind, type) => [
    h("td", { class: "ln" }, side ? String(side.n) : ""),
    h("td", { class: side && kind ? kind : null, html: side ? highlight(type, side.text) : "" }),
  ];
  const table = h("table", { class: "diff", id: "diff", "aria-label": "Side-by-side diff" },
    h("colgroup", {}, h("col", { style: "width:44px" }), h("col", {}), h("col", { style: "width:44px" }), h("col", {})),
    h("thead", {}, h("tr", {}, h("th", { colspan: "2" }, `Version ${oldV.version} (id ${oldV.id})`),
      h("th", { colspan: "2" }, `Version ${newV.version} (id ${newV.id})`))),
    h("tbody", {}, rows.map((r) => h("tr", { class: r.same ? null : "changed" },
      cell(r.old, r.same ? null : "del", oldV.schemaType), cell(r.new, r.same ? null : "ins", newV.schemaType)))));
  const verdicts = h("div", { id: "verdicts" }, h("p", { class: "muted" }, "Checking…"));
  show(h("h1", {}, h("a", { href: base }, subject), ": diff"), form,
    h("h2", {}, `Can version ${newV.version} follow version ${oldV.version}?`), verdicts, h("h2", {}, "Side by side"), table);
  try {
    const cmp = await api("GET", `/ui/api/subjects/${enc(subject)}/compare?old=${oldV.version}&new=${newV.version}`);
    fill(verdicts,
      h("table", { id: "levels" }, h("thead", {}, h("tr", {}, ["Level", "Verdict", "Reasons"].map((t) => h("th", {}, t)))),
        h("tbody", {}, cmp.levels.map((lv) => h("tr", { "data-level": lv.level, class: lv.level === data.compatibility ? "configured" : null },
          h("td", {}, lv.level, lv.level === data.compatibility ? h("span", { class: "badge" }, "configured") : null),
          h("td", { class: `verdict ${lv.is_compatible ? "ok" : "bad"}` }, lv.is_compatible ? "compatible" : "incompatible"),
          h("td", {}, lv.reasons.length ? h("ul", { class: "plain" }, lv.reasons.map((r) => h("li", {}, h("code", {}, r)))) : ""))))),
      cmp.changes ? h("div", {}, h("h2", {}, "Change kinds"), cmp.changes.length ?
        h("ul", { class: "plain", id: "change-kinds" }, cmp.changes.map((c) => h("li", {}, h("code", {}, c)))) :
        h("p", { class: "muted" }, "No change.")) : null);
  } catch (e) {
    verdicts.replaceChildren(notice("bad", e.message));
  }
}

async function editorPage(subject) {
  probeAccess(subject || "");
  let latest = null;
  if (subject) {
    const data = await loadSubject(subject).catch(() => null);
    latest = data ? data.versions.filter((v) => !v.deleted).pop() || null : null;
  }
  const type = latest ? latest.schemaType : "AVRO";
  const result = h("div", { id: "editor-result", "aria-live": "polite" });
  const registerBtn = h("button", { type: "button", id: "register", class: "primary write", disabled: true }, "Register");
  const nameInput = subject ? null : h("input", { id: "editor-subject", required: true, autocomplete: "off" });
  const form = h("form", { id: "editor", onsubmit: (e) => { e.preventDefault(); check(); } },
    nameInput ? h("label", { for: "editor-subject" }, "Subject", nameInput) : null,
    h("div", { class: "row" }, select("editor-type", "Schema type", TYPES.map((t) => [t, t]), type)),
    h("label", { for: "editor-schema" }, "Schema",
      h("textarea", { id: "editor-schema", spellcheck: "false" }, latest ? pretty(latest.schemaType, latest.schema) : "")),
    h("label", { for: "editor-refs" }, "References (JSON list of {name, subject, version})",
      h("input", { id: "editor-refs", value: JSON.stringify(latest ? latest.references : []) })),
    h("div", { class: "row" }, h("button", { type: "submit", id: "check" }, "Check compatibility"), registerBtn),
    result);
  show(h("h1", {}, subject ? h("a", { href: `#/s/${enc(subject)}` }, subject) : "New subject",
    ": test a new version"), form);
  // Any edit invalidates the last check: registering needs a passing check of the text as it is.
  form.addEventListener("input", () => { registerBtn.disabled = true; });

  const request = () => {
    const body = { schema: document.getElementById("editor-schema").value,
      schemaType: document.getElementById("editor-type").value };
    const refs = document.getElementById("editor-refs").value.trim();
    body.references = refs ? JSON.parse(refs) : [];
    return body;
  };
  const target = () => subject || (nameInput.value || "").trim();

  async function check() {
    result.replaceChildren();
    registerBtn.disabled = true;
    const name = target();
    if (!name) { result.append(notice("bad", "Name the subject first.")); return; }
    let body;
    try { body = request(); } catch (e) { result.append(notice("bad", `References are not JSON: ${e.message}`)); return; }
    try {
      const verdict = await api("POST", `/compatibility/subjects/${enc(name)}/versions?verbose=true`, body);
      if (verdict.is_compatible) {
        result.append(notice("ok", "Compatible with the versions the subject's compatibility level names."));
        registerBtn.disabled = false;
      } else {
        result.append(notice("bad", ["Incompatible:", ...(verdict.messages || [])].join("\n")));
      }
    } catch (e) {
      result.append(notice("bad", e.message));
    }
  }
  registerBtn.addEventListener("click", async () => {
    const name = target();
    result.replaceChildren();
    try {
      const answer = await api("POST", `/subjects/${enc(name)}/versions`, request());
      const registered = await api("GET", `/ui/api/subjects/${enc(name)}`);
      const v = registered.versions.find((x) => x.id === answer.id && !x.deleted);
      result.append(notice("ok", `Registered: id ${answer.id}` + (v ? `, version ${v.version}` : "") + "."),
        h("a", { href: `#/s/${enc(name)}` + (v ? `?v=${v.version}` : "") }, "Open the subject"));
      registerBtn.disabled = true;
    } catch (e) {
      result.append(notice("bad", e.message));
    }
  });
}

// ---- the DEK registry: KEKs and their DEKs (names and versions only: key material is never shown) -------------

const KEKS = "/dek-registry/v1/keks";
const ALGORITHMS = ["AES256_GCM", "AES128_GCM", "AES256_SIV"];

async function keksPage() {
  probeAccess("");
  const all = await api("GET", `${KEKS}?deleted=true`);
  const keks = await Promise.all(all.map((name) => api("GET", `${KEKS}/${enc(name)}?deleted=true`)));
  const rows = keks.map((k) => h("tr", { "data-kek": k.name, class: k.deleted ? "deleted" : null },
    h("td", {}, h("a", { href: `#/keys/${enc(k.name)}` }, k.name), k.deleted ? [" ", h("span", { class: "badge deleted" }, "soft-deleted")] : null),
    h("td", {}, k.kmsType), h("td", {}, h("code", {}, k.kmsKeyId)), h("td", {}, k.shared ? "yes" : "no"),
    h("td", {}, k.doc || ""), h("td", {}, fmtTime(k.ts))));
  show(h("h1", {}, "Encryption keys"),
    h("p", { class: "muted" }, "Key encryption keys (KEKs) of the DEK registry. Key material is never shown here."),
    keks.length ? h("table", { id: "keks" },
      h("thead", {}, h("tr", {}, ["KEK", "KMS type", "KMS key id", "Shared", "Doc", "Changed"].map((t) => h("th", {}, t)))),
      h("tbody", {}, rows)) : h("p", { class: "muted", id: "no-keks" }, "No KEKs."));
}

async function kekPage(name) {
  probeAccess("");
  const kek = await api("GET", `${KEKS}/${enc(name)}?deleted=true`);
  const subjects = await api("GET", `${KEKS}/${enc(name)}/deks?deleted=true`);
  const rows = [];
  for (const subject of subjects) {
    for (const algorithm of ALGORITHMS) {
      const base = `${KEKS}/${enc(name)}/deks/${enc(subject)}/versions?algorithm=${algorithm}`;
      const [all, live] = await Promise.all([api("GET", `${base}&deleted=true`), api("GET", base)]);
      if (!all.length) continue;
      const versions = all.map((v) => live.includes(v) ? String(v) : `${v} (soft-deleted)`).join(", ");
      rows.push(h("tr", { "data-subject": subject, "data-algorithm": algorithm },
        h("td", {}, subject), h("td", {}, algorithm), h("td", {}, versions)));
    }
  }
  show(h("h1", {}, h("a", { href: "#/keys" }, "Encryption keys"), " / ", name),
    h("dl", { class: "facts" }, h("dt", {}, "KMS"), h("dd", {}, `${kek.kmsType}: `, h("code", {}, kek.kmsKeyId)),
      h("dt", {}, "Shared"), h("dd", {}, kek.shared ? "yes: the registry generates and unwraps its DEKs" : "no"),
      kek.doc ? [h("dt", {}, "Doc"), h("dd", {}, kek.doc)] : null,
      kek.deleted ? [h("dt", {}, "State"), h("dd", {}, "soft-deleted")] : null),
    h("h2", {}, "Data encryption keys"),
    rows.length ? h("table", { id: "deks" },
      h("thead", {}, h("tr", {}, ["Subject", "Algorithm", "Versions"].map((t) => h("th", {}, t)))),
      h("tbody", {}, rows)) : h("p", { class: "muted", id: "no-deks" }, "No DEKs under this KEK."));
}

// ---- routing --------------------------------------------------------------------------------------------

async function route() {
  const { path, params } = hashQuery();
  const m = path.match(/^\/s\/([^/]+)(\/diff|\/new)?$/);
  try {
    if (m) {
      const subject = decodeURIComponent(m[1]);
      if (m[2] === "/diff") await diffPage(subject, params);
      else if (m[2] === "/new") await editorPage(subject);
      else await subjectPage(subject, params);
    } else if (path === "/new") await editorPage(null);
    else if (path === "/keys") await keksPage();
    else if (path.startsWith("/keys/")) await kekPage(decodeURIComponent(path.slice(6)));
    else if (path === "/settings") await settingsPage();
    else if (path === "/exporters") await exportersPage();
    else await subjectsPage(params);
  } catch (e) {
    show(notice("bad", e.message), h("a", { href: "#/" }, "All subjects"));
  }
  document.title = `${path.startsWith("/s/") ? decodeURIComponent(path.split("/")[2]) + " · " : ""}schemakit registry`;
}

// A new page starts at the top, with the focus on its content (where a screen reader reads on).
window.addEventListener("hashchange", () => route().then(() => {
  window.scrollTo(0, 0);
  main().focus({ preventScroll: true });
}));
document.addEventListener("keydown", (e) => {
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
  if (e.key === "/" && !typing) {
    const search = document.getElementById("search");
    if (search) { e.preventDefault(); search.focus(); }
  }
});
route();
