// weave status page: draws the feed of /ui/events (server-sent events).
// Every string from the network goes through textContent, never HTML.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const TABLE_ABOVE = 60; // peers: above this the table is the default view
const KIND_TEXT = {
  "fastdp": "fastdp", "sleeve": "sleeve", "sleeve-fallback": "sleeve (fallback)", "established": "established (path unknown)",
  "connecting": "connecting", "failed": "failed", "relayed": "relayed (no direct link)",
};
const BAD_KINDS = new Set(["failed", "connecting", "sleeve-fallback"]);

const st = { feed: null, sel: null, filter: "", view: null, renders: 0, lastMs: 0, peers: new Map() };

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else if (k === "onclick") e.addEventListener("click", v);
    else e.setAttribute(k, v);
  }
  for (const c of kids) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  return e;
}

function nick(name) {
  const p = st.peers.get(name);
  return p && p.nick ? p.nick : name;
}

function label(name) {
  const p = st.peers.get(name);
  if (!p) return name || "?";
  return p.nick ? `${p.nick} (${p.name})` : p.name;
}

function linkID(l) { return `${l.a}|${l.b || "@" + l.addr}`; }

function ago(t) {
  const s = Math.max(0, Math.round((Date.now() - t) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor(s % 3600 / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor(s % 86400 / 3600)}h`;
}

function rel(t) { return el("span", { class: "rel", "data-t": String(t) }, ago(t)); }

function rate(n) {
  if (!n) return "0";
  if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (n >= 1e3) return (n / 1e3).toFixed(1) + "k";
  return n >= 10 ? n.toFixed(0) : n.toFixed(1);
}

function bytes(n) {
  if (!n) return "";
  const u = ["B/s", "kB/s", "MB/s", "GB/s"];
  let i = 0;
  while (n >= 1000 && i < u.length - 1) { n /= 1000; i++; }
  return `${n.toFixed(n >= 10 ? 0 : 1)} ${u[i]}`;
}

function softwareText(p) {
  if (p.software === "ours") return `ours, ${p.release || "?"}`;
  if (p.software === "2.8.1") return "Weave Net 2.8.1 (sends no link summary)";
  return "unknown (gone from the topology)";
}

// ms formats microseconds.
function ms(us) { return us >= 1000 ? (us / 1000).toFixed(1) + " ms" : `${us} µs`; }
// how an end measured its RTT: the fastdp heartbeat or, on sleeve, the liveness probe
function rttBy(e) { return e.rk === "probe" ? "liveness probe" : "heartbeat"; }

function badge(kind) { return el("span", { class: `badge k-${kind}` }, KIND_TEXT[kind] || kind); }

function liveBadge(p) {
  const s = p.liveness || "none";
  return el("span", { class: `badge l-${s}` }, p.liveness || (p.inTopology ? "in topology" : "unknown"));
}

// ---- filtering ----

function peerText(p) {
  return [p.name, p.nick, p.address, p.software, p.release, p.liveness, p.self ? "self" : "", p.reachable ? "" : "unreachable"].join(" ").toLowerCase();
}

function terms() { return st.filter.toLowerCase().split(/\s+/).filter(Boolean); }

function peerMatches(p, ts) {
  if (!ts.length) return true;
  const t = peerText(p);
  return ts.every(x => t.includes(x));
}

function linkMatches(l, ts) {
  if (!ts.length) return true;
  const pa = st.peers.get(l.a), pb = st.peers.get(l.b);
  const ends = (l.ends || []).map(e => [e.o, e.f, e.m, e.e ? "encrypted" : ""].join(" ")).join(" ");
  const t = [l.kind, l.state, l.info, l.addr, l.via, ends, pa ? peerText(pa) : l.a, pb ? peerText(pb) : l.b].join(" ").toLowerCase();
  return ts.every(x => t.includes(x));
}

// A relayed peer is not a link: with many peers its dotted line (and
// table row) shows only when that peer is picked or the filter asks for
// "relayed".
function showRelayed(l, f) {
  if (l.kind !== "relayed" || f.peers.length <= 20) return true;
  return (st.sel && st.sel.type === "peer" && st.sel.id === l.b) || terms().some(x => "relayed".startsWith(x) && x.length >= 3);
}

// ---- header ----

function renderHeader(f) {
  const self = document.getElementById("self");
  self.replaceChildren(el("span", {}, f.selfNick || f.self), " ", el("span", { class: "muted" }, `${f.self} · ${f.version}${f.encryption ? " · encrypted" : ""}`));
  const counts = {};
  for (const l of f.links) counts[l.kind] = (counts[l.kind] || 0) + 1;
  const dead = f.peers.filter(p => p.liveness === "dead").length;
  const suspect = f.peers.filter(p => p.liveness === "suspect").length;
  const old = f.peers.filter(p => p.software === "2.8.1").length;
  const chips = [el("span", { class: "chip", "data-count": "peers" }, el("b", {}, f.peers.length), " peers")];
  for (const k of ["fastdp", "sleeve", "sleeve-fallback", "established", "connecting", "failed", "relayed"]) {
    if (counts[k]) {
      const cls = k === "failed" ? "bad" : (BAD_KINDS.has(k) ? "warn" : (k === "fastdp" ? "ok" : ""));
      chips.push(el("span", { class: `chip ${cls}`, "data-count": k }, el("b", {}, counts[k]), " " + (KIND_TEXT[k] || k)));
    }
  }
  if (suspect) chips.push(el("span", { class: "chip warn", "data-count": "suspect" }, el("b", {}, suspect), " suspect"));
  if (dead) chips.push(el("span", { class: "chip bad", "data-count": "dead" }, el("b", {}, dead), " dead"));
  if (old) chips.push(el("span", { class: "chip", "data-count": "weave-2.8.1" }, el("b", {}, old), " 2.8.1"));
  document.getElementById("counts").replaceChildren(...chips);
}

// ---- graph ----

function layout(peers, w, h) {
  const pos = new Map();
  const n = peers.length;
  h -= 44; // the legend's strip at the bottom
  const cx = w / 2, cy = h / 2;
  if (n === 1) { pos.set(peers[0].name, [cx, cy]); return pos; }
  const r = Math.max(40, Math.min(w, h) / 2 - (n > TABLE_ABOVE ? 24 : 64));
  peers.forEach((p, i) => {
    const a = -Math.PI / 2 + 2 * Math.PI * i / n;
    pos.set(p.name, [cx + r * Math.cos(a), cy + r * Math.sin(a)]);
  });
  return pos;
}

function orderPeers(f) {
  // Us first, then by nickname: a stable circle from one update to the next.
  return [...f.peers].sort((x, y) => (y.self - x.self) || (x.nick || x.name).localeCompare(y.nick || y.name) || x.name.localeCompare(y.name));
}

function renderGraph(f) {
  const g = document.getElementById("graph");
  const box = g.getBoundingClientRect();
  const w = Math.max(300, box.width), h = Math.max(300, box.height);
  g.setAttribute("viewBox", `0 0 ${w} ${h}`);
  const peers = orderPeers(f);
  const pos = layout(peers, w, h);
  const ts = terms();
  const many = peers.length > TABLE_ABOVE;
  const mid = peers.length > 20;
  const rad = many ? 5 : (mid ? 9 : 15);
  const links = svg("g", { class: "links" });
  for (const l of f.links) {
    if (!l.b) continue; // a target whose peer is unknown: listed in the table only
    if (!showRelayed(l, f)) continue;
    const a = pos.get(l.a), b = pos.get(l.b);
    if (!a || !b) continue;
    const id = linkID(l);
    const match = linkMatches(l, ts);
    const cls = `link kind-${l.kind}${match ? "" : " dim"}${st.sel && st.sel.id === id ? " sel" : ""}`;
    const line = svg("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], class: cls, "data-link": id, "data-kind": l.kind });
    const t = svg("title");
    t.textContent = `${nick(l.a)} – ${nick(l.b)}: ${KIND_TEXT[l.kind] || l.kind}`;
    line.append(t);
    line.addEventListener("click", ev => { ev.stopPropagation(); pick("link", id); });
    links.append(line);
    if ((l.ends || []).some(e => e.e)) {
      links.append(svg("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], class: `link-enc${match ? "" : " dim"}` }));
    }
  }
  const nodes = svg("g", { class: "peers" });
  for (const p of peers) {
    const [x, y] = pos.get(p.name);
    const match = ts.length > 0 && peerMatches(p, ts);
    const cls = ["peer", `l-${p.liveness || "none"}`, p.self ? "self" : "", p.reachable ? "" : "unreach",
      ts.length && !match ? "dim" : "", match ? "match" : "", st.sel && st.sel.id === p.name ? "sel" : ""].filter(Boolean).join(" ");
    const gp = svg("g", { class: cls, "data-peer": p.name, "data-liveness": p.liveness || "", "data-software": p.software, transform: `translate(${x},${y})` });
    const shape = p.software !== "2.8.1"
      ? svg("circle", { r: rad, class: "shape" })
      : svg("rect", { x: -rad, y: -rad, width: 2 * rad, height: 2 * rad, rx: 2, class: "shape" });
    gp.append(shape);
    const t = svg("title");
    t.textContent = `${label(p.name)}${p.address ? " " + p.address : ""} · ${p.software}${p.liveness ? " · " + p.liveness : ""}`;
    gp.append(t);
    const showLabel = !many || p.self || match || (st.sel && st.sel.id === p.name);
    if (showLabel) {
      // Labels point outwards from the circle's centre.
      const dx = x - w / 2, dy = y - (h - 44) / 2, d = Math.hypot(dx, dy) || 1;
      const lx = dx / d * (rad + 6);
      const anchor = Math.abs(dx) < 10 ? "middle" : (dx > 0 ? "start" : "end");
      const lines = mid ? 1 : 2;
      // Above the centre the block of lines grows upwards, below downwards.
      const ly = dy < -Math.abs(dx) / 2 ? dy / d * (rad + 6) - 13 * (lines - 1) - 2 : dy / d * (rad + 6) + 8;
      const tx = svg("text", { x: lx, y: ly, "text-anchor": anchor });
      tx.textContent = p.nick || p.name;
      gp.append(tx);
      if (!mid) {
        const sub = svg("text", { x: lx, y: ly + 13, "text-anchor": anchor, class: "sub" });
        sub.textContent = [p.address, p.software === "2.8.1" ? "2.8.1" : "", p.liveness && p.liveness !== "alive" ? p.liveness : ""].filter(Boolean).join(" · ");
        gp.append(sub);
      }
    }
    gp.addEventListener("click", ev => { ev.stopPropagation(); pick("peer", p.name); });
    nodes.append(gp);
  }
  g.replaceChildren(links, nodes);
  const wrap = document.getElementById("picture");
  let note = wrap.querySelector(".notice");
  if (many) {
    if (!note) { note = el("div", { class: "notice" }); wrap.append(note); }
    note.textContent = `${peers.length} peers: labels only for matches of the filter; the table lists every peer`;
  } else if (note) note.remove();
}

// ---- peer table ----

function renderPeerTable(f) {
  const ts = terms();
  const body = document.querySelector("#peer-table tbody");
  const linksOf = new Map();
  for (const l of f.links) for (const n of [l.a, l.b]) if (n) linksOf.set(n, (linksOf.get(n) || 0) + 1);
  const rows = [];
  // Trouble first: dead, suspect, unreachable peers head the table.
  const trouble = p => p.self ? -1 : (p.liveness === "dead" ? 0 : p.liveness === "suspect" ? 1 : !p.reachable ? 2 : 3);
  for (const p of orderPeers(f).sort((x, y) => trouble(x) - trouble(y))) {
    if (!peerMatches(p, ts)) continue;
    rows.push(el("tr", { class: `pick${st.sel && st.sel.id === p.name ? " sel" : ""}`, "data-peer": p.name, "data-liveness": p.liveness || "", onclick: () => pick("peer", p.name) },
      el("td", { class: "mono" }, p.name, p.self ? " (this router)" : ""),
      el("td", {}, p.nick),
      el("td", { class: "mono" }, p.address || ""),
      el("td", {}, softwareText(p)),
      el("td", {}, liveBadge(p)),
      el("td", {}, p.since ? rel(Date.parse(p.since)) : ""),
      el("td", {}, p.self ? "" : (p.reachable ? (p.via ? `via ${nick(p.via)}` : "direct") : "unreachable")),
      el("td", {}, linksOf.get(p.name) || 0),
      el("td", {}, f.ipam ? p.share.toFixed(1) + " %" : "")));
  }
  body.replaceChildren(...rows);
}

// ---- links table ----

function endCells(l) {
  const ends = l.ends || [];
  const who = e => nick(e.from) + (e.stale ? " (stale)" : "");
  const path = ends.map(e => `${who(e)}: ${e.o || "none"}`).join("; ");
  const enc = ends.length ? (ends.every(e => e.e) ? "yes" : (ends.some(e => e.e) ? "partly" : "no")) : "";
  const mtu = [...new Set(ends.map(e => e.m).filter(Boolean))].join(" / ");
  const rtt = ends.filter(e => e.rtt).map(e => `${who(e)}: ${ms(e.rtt)}${e.rk === "probe" ? " (probe)" : ""}`).join("; ");
  const why = [...new Set(ends.map(e => e.f).filter(Boolean))].join("; ") || l.info || (l.via ? `via ${nick(l.via)}` : "");
  const traffic = ends.filter(e => e.tx || e.rx || e.tb || e.rb)
    .map(e => `${who(e)}: ${rate(e.tx)} / ${rate(e.rx)}${e.tb || e.rb ? ` (${bytes(e.tb) || "0"} / ${bytes(e.rb) || "0"})` : ""}`).join("; ");
  return { path, enc, mtu, rtt, why, traffic, seen: ends.map(who).join(", ") };
}

function renderLinks(f) {
  const ts = terms();
  const body = document.querySelector("#link-table tbody");
  const rows = [];
  const sorted = [...f.links].sort((x, y) => (BAD_KINDS.has(y.kind) - BAD_KINDS.has(x.kind)) || nick(x.a).localeCompare(nick(y.a)) || nick(x.b).localeCompare(nick(y.b)));
  for (const l of sorted) {
    if (!linkMatches(l, ts) || !showRelayed(l, f)) continue;
    const id = linkID(l);
    const c = endCells(l);
    rows.push(el("tr", { class: `pick${st.sel && st.sel.id === id ? " sel" : ""}`, "data-link": id, "data-kind": l.kind, onclick: () => pick("link", id) },
      el("td", {}, `${nick(l.a)} – ${l.b ? nick(l.b) : l.addr}`),
      el("td", {}, badge(l.kind)),
      el("td", {}, c.path),
      el("td", {}, c.enc),
      el("td", {}, c.mtu),
      el("td", {}, c.rtt),
      el("td", {}, c.why),
      el("td", {}, c.traffic),
      el("td", {}, c.seen)));
  }
  body.replaceChildren(...rows);
  const hidden = f.links.filter(l => !showRelayed(l, f)).length;
  document.getElementById("links-count").textContent = `${rows.length} of ${f.links.length}` + (hidden ? ` (${hidden} relayed peers folded: type "relayed" to list them)` : "");
}

// ---- IPAM, DNS, containers ----

// Colours go through the CSSOM: the CSP forbids style attributes.
function swatch(colour) {
  const e = el("span", { class: "swatch" });
  e.style.background = colour;
  return e;
}

function scroll(table) { return el("div", { class: "scroll" }, table); }

// Share colours: none of them red, which marks unreachable owners.
const SHARE_COLOURS = ["#2f6fd6", "#1a9e6e", "#8a5cd1", "#e0a100", "#17a2b8", "#5c6bc0", "#7cb342", "#8d6e63", "#00897b", "#9e9d24"];
function hue(i) { return SHARE_COLOURS[i % SHARE_COLOURS.length]; }

function renderIPAM(f) {
  const box = document.getElementById("ipam");
  const ip = f.ipam;
  if (!ip) { box.replaceChildren(el("p", { class: "muted" }, "IPAM is off on this router.")); return; }
  const bar = el("div", { class: "bar" });
  ip.shares.forEach((s, i) => {
    const d = el("div", { title: `${s.nick || s.peer}: ${s.size} addresses (${s.percent.toFixed(1)} %)${s.reachable ? "" : " — unreachable"}` });
    d.style.width = `${s.percent}%`;
    d.style.background = s.reachable ? hue(i) : "var(--failed)";
    bar.append(d);
  });
  const rows = ip.shares.map((s, i) => el("tr", { "data-share": s.peer },
    el("td", {}, swatch(s.reachable ? hue(i) : "var(--failed)"), s.nick || s.peer),
    el("td", { class: "mono" }, s.peer), el("td", {}, s.size), el("td", {}, s.percent.toFixed(1) + " %"),
    el("td", {}, s.reachable ? "reachable" : "unreachable")));
  const kv = el("dl", { class: "kv" },
    el("dt", {}, "Status"), el("dd", {}, ip.status + (ip.problem ? ` — ${ip.problem}` : "")),
    el("dt", {}, "Range"), el("dd", { class: "mono" }, `${ip.range} (${ip.size} addresses)`),
    el("dt", {}, "Here"), el("dd", {}, `${ip.localUsed} in use, ${ip.localFree} free`),
    el("dt", {}, "Unreachable owners"), el("dd", {}, `${ip.unreachable} addresses`),
    el("dt", {}, "Pending"), el("dd", {}, `${ip.pendingClaims.length} claims, ${ip.pendingAllocates.length} allocations`));
  const claims = ip.pendingClaims.map(c => el("li", { class: "mono" }, `${c.Ident} ${c.CIDR}`));
  box.replaceChildren(kv, bar,
    scroll(el("table", { class: "grid" }, el("thead", {}, el("tr", {}, el("th", {}, "Owner"), el("th", {}, "Peer"), el("th", {}, "Addresses"), el("th", {}, "Share"), el("th", {}, ""))), el("tbody", {}, ...rows))),
    claims.length ? el("ul", {}, ...claims) : "");
}

function renderDNS(f) {
  const box = document.getElementById("dns");
  const d = f.dns;
  if (!d) { box.replaceChildren(el("p", { class: "muted" }, "weaveDNS is off on this router.")); return; }
  const ts = terms();
  const rows = d.entries.filter(e => !ts.length || ts.every(x => [e.name, e.address, e.origin, nick(e.origin), e.container].join(" ").toLowerCase().includes(x)))
    .map(e => el("tr", { "data-dns": e.name }, el("td", {}, e.name), el("td", { class: "mono" }, e.address), el("td", {}, nick(e.origin)), el("td", { class: "mono" }, e.container.slice(0, 12))));
  box.replaceChildren(el("p", { class: "muted" }, `domain ${d.domain} · ${d.entries.length} names`),
    scroll(el("table", { class: "grid" }, el("thead", {}, el("tr", {}, el("th", {}, "Name"), el("th", {}, "Address"), el("th", {}, "Peer"), el("th", {}, "Container"))), el("tbody", {}, ...rows))));
}

function renderContainers(f) {
  const box = document.getElementById("containers");
  if (!f.containers.length) { box.replaceChildren(el("p", { class: "muted" }, "No container attached here.")); return; }
  const rows = f.containers.map(c => el("tr", { "data-container": c.id }, el("td", { class: "mono" }, c.id.slice(0, 24)), el("td", { class: "mono" }, c.addresses.join(", ")), el("td", {}, (c.names || []).join(", "))));
  box.replaceChildren(el("table", { class: "grid" }, el("thead", {}, el("tr", {}, el("th", {}, "Container"), el("th", {}, "Addresses"), el("th", {}, "DNS names"))), el("tbody", {}, ...rows)));
}

// ---- details ----

function endBlock(e) {
  return el("div", { class: "end" },
    el("b", {}, `${nick(e.from)}'s view`), " ", el("span", { class: "muted" }, "reported ", rel(e.time * 1000), " ago", e.stale ? " — stale: that peer is dead or unreachable" : ""),
    el("dl", { class: "kv" },
      el("dt", {}, "Data path"), el("dd", {}, e.o || "none"),
      el("dt", {}, "Connection"), el("dd", {}, `${e.s}${e.a ? " " + e.a : ""}`),
      el("dt", {}, "Encrypted"), el("dd", {}, e.e ? `yes${e.c ? " (" + e.c + ")" : ""}` : "no"),
      el("dt", {}, "MTU"), el("dd", {}, e.m || "?"),
      el("dt", {}, "RTT"), el("dd", {}, e.rtt ? `${ms(e.rtt)} (${rttBy(e)})` : "not measured yet"),
      e.f ? el("dt", {}, "Fallback") : null, e.f ? el("dd", {}, e.f) : null,
      el("dt", {}, "Frames/s"), el("dd", {}, `${rate(e.tx)} tx / ${rate(e.rx)} rx`),
      (e.tb || e.rb) ? el("dt", {}, "Bytes") : null, (e.tb || e.rb) ? el("dd", {}, `${bytes(e.tb) || "0"} tx / ${bytes(e.rb) || "0"} rx`) : null));
}

function renderDetails(f) {
  const body = document.getElementById("detail-body");
  const hint = document.querySelector("#details .hint");
  if (!st.sel) { body.replaceChildren(); hint.hidden = false; return; }
  hint.hidden = true;
  if (st.sel.type === "peer") {
    const p = st.peers.get(st.sel.id);
    if (!p) { body.replaceChildren(el("p", { class: "muted" }, "That peer is gone.")); return; }
    const links = f.links.filter(l => l.a === p.name || l.b === p.name);
    body.replaceChildren(
      el("h3", { "data-detail": p.name }, p.nick || p.name, p.self ? " (this router)" : ""),
      el("dl", { class: "kv" },
        el("dt", {}, "Name"), el("dd", { class: "mono" }, p.name),
        el("dt", {}, "Address"), el("dd", { class: "mono" }, p.address || "unknown"),
        el("dt", {}, "Software"), el("dd", {}, softwareText(p)),
        el("dt", {}, "Liveness"), el("dd", {}, liveBadge(p), p.since ? el("span", {}, " since ", new Date(p.since).toLocaleString(), " (", rel(Date.parse(p.since)), ")") : ""),
        el("dt", {}, "Route"), el("dd", {}, p.self ? "this router" : (p.reachable ? (p.via ? `via ${label(p.via)}` : "direct") : "unreachable")),
        el("dt", {}, "In topology"), el("dd", {}, p.inTopology ? "yes" : "no (only liveness remembers it)"),
        f.ipam ? el("dt", {}, "Ring share") : null, f.ipam ? el("dd", {}, p.share.toFixed(2) + " %") : null),
      el("h3", {}, `Links (${links.length})`),
      ...links.map(l => el("div", { class: "end pick", onclick: () => pick("link", linkID(l)) },
        badge(l.kind), " ", l.a === p.name ? (l.b ? label(l.b) : l.addr) : label(l.a))));
    return;
  }
  const l = f.links.find(x => linkID(x) === st.sel.id);
  if (!l) { body.replaceChildren(el("p", { class: "muted" }, "That link is gone.")); return; }
  body.replaceChildren(
    el("h3", { "data-detail": st.sel.id }, `${nick(l.a)} – ${l.b ? nick(l.b) : l.addr}`),
    el("p", {}, badge(l.kind), " ", l.state, l.via ? ` via ${label(l.via)}` : ""),
    l.info ? el("p", { class: "mono" }, l.info) : null,
    ...(l.ends || []).map(endBlock),
    (l.ends || []).length ? null : el("p", { class: "muted" }, l.kind === "relayed" ? "No direct link: traffic is relayed." : "No end of this link sends summaries (Weave Net 2.8.1 routers): data path unknown."));
}

// ---- glue ----

function pick(type, id) {
  st.sel = st.sel && st.sel.id === id ? null : { type, id };
  render();
}

function setView(v) {
  st.view = v;
  document.getElementById("view-graph").classList.toggle("on", v === "graph");
  document.getElementById("view-table").classList.toggle("on", v === "table");
  document.getElementById("graph-wrap").hidden = v !== "graph";
  document.getElementById("peer-table-wrap").hidden = v !== "table";
  document.getElementById("legend").hidden = v !== "graph";
  const note = document.querySelector("#picture .notice");
  if (note) note.hidden = v !== "graph";
}

function render() {
  const f = st.feed;
  if (!f) return;
  const t0 = performance.now();
  st.peers = new Map(f.peers.map(p => [p.name, p]));
  if (!st.view) setView(f.peers.length > TABLE_ABOVE ? "table" : "graph");
  renderHeader(f);
  if (st.view === "graph") renderGraph(f); else renderPeerTable(f);
  renderLinks(f);
  renderIPAM(f);
  renderDNS(f);
  renderContainers(f);
  renderDetails(f);
  const script = performance.now() - t0;
  // The render time includes style and layout, forced here.
  void document.body.offsetHeight;
  const ms = performance.now() - t0;
  const n = ++st.renders;
  window.weaveRender = { n, peers: f.peers.length, links: f.links.length, view: st.view, scriptMs: script, ms };
  requestAnimationFrame(() => { document.body.dataset.renders = String(n); });
}

function legend() {
  const items = [];
  for (const k of ["fastdp", "sleeve", "sleeve-fallback", "established", "connecting", "failed", "relayed"]) {
    const s = svg("svg", { viewBox: "0 0 26 8" });
    s.append(svg("line", { x1: 1, y1: 4, x2: 25, y2: 4, class: `link kind-${k}` }));
    items.push(el("span", {}, s, KIND_TEXT[k]));
  }
  const enc = svg("svg", { viewBox: "0 0 26 8" });
  enc.append(svg("line", { x1: 1, y1: 4, x2: 25, y2: 4, class: "link kind-sleeve" }), svg("line", { x1: 1, y1: 4, x2: 25, y2: 4, class: "link-enc" }));
  items.push(el("span", {}, enc, "encrypted"), el("span", {}, "● ours  ■ Weave 2.8.1"));
  document.getElementById("legend").replaceChildren(...items);
}

function connect() {
  const live = document.getElementById("live");
  const es = new EventSource("/ui/events");
  es.addEventListener("open", () => { live.className = "live up"; live.textContent = "live"; });
  es.addEventListener("error", () => { live.className = "live down"; live.textContent = "reconnecting…"; });
  es.addEventListener("feed", ev => {
    st.feed = JSON.parse(ev.data);
    live.className = "live up";
    live.textContent = "live · " + new Date().toLocaleTimeString();
    render();
  });
}

function start() {
  legend();
  document.getElementById("view-graph").addEventListener("click", () => { setView("graph"); render(); });
  document.getElementById("view-table").addEventListener("click", () => { setView("table"); render(); });
  const filter = document.getElementById("filter");
  filter.addEventListener("input", () => { st.filter = filter.value; render(); });
  document.getElementById("graph").addEventListener("click", () => { if (st.sel) { st.sel = null; render(); } });
  window.addEventListener("resize", () => { if (st.view === "graph") render(); });
  setInterval(() => { for (const e of document.querySelectorAll(".rel")) e.textContent = ago(Number(e.dataset.t)); }, 1000);
  connect();
}

document.addEventListener("DOMContentLoaded", start);
