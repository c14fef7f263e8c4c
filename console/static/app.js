// gokafka console: renders the state and timeline the broker pushes over
// server-sent events (/api/events). No polling: the page only listens.
"use strict";

let state = null;
const timeline = [];
const MAX_TIMELINE = 500;

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k.startsWith("data-")) e.setAttribute(k, String(v)); // false is a value here
    else if (v === false) continue;
    else if (k === "class") e.className = v;
    else if (k === "title") e.title = v;
    else if (k === "style") e.setAttribute("style", v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function badge(text, cls) { return el("span", { class: "badge " + (cls || "") }, text); }
const fmt = (n) => (n === undefined || n === null ? "–" : Number(n).toLocaleString("en-US"));

function renderBrokers() {
  const root = $("brokers");
  root.replaceChildren();
  for (const b of state.brokers) {
    root.append(el("div", { class: "broker" + (b.fenced ? " fenced" : ""), "data-broker": b.id, "data-fenced": b.fenced, "data-controller": b.controller },
      el("div", {}, el("span", { class: "id" }, "broker " + b.id), " ",
        b.controller ? badge("controller", "ctl") : null, " ",
        b.fenced ? badge("fenced", "bad") : badge("live", "ok"), " ",
        b.id === state.node ? badge("this console") : null),
      el("div", { class: "addr" }, b.host + ":" + b.port + (b.rack ? " · rack " + b.rack : "")),
      el("div", { class: "addr" }, b.log_dirs + " log dir" + (b.log_dirs === 1 ? "" : "s"),
        b.offline_log_dirs > 0 ? [" ", badge(b.offline_log_dirs + " offline", "bad")] : null)));
  }
}

function replicaRow(topic, p, r, scale) {
  const known = r.leo !== undefined && r.leo !== null;
  const cls = "replica" + (r.in_isr ? "" : " out") + (known ? "" : " unknown");
  const width = known && scale > 0 ? Math.min(100, (100 * r.leo) / scale) : 0;
  let info = known ? "LEO " + fmt(r.leo) : "LEO unknown here";
  if (r.lag_offsets !== undefined && r.lag_offsets !== null && r.lag_offsets > 0) {
    info += " · lag " + fmt(r.lag_offsets) + (r.lag_ms ? " / " + (r.lag_ms / 1000).toFixed(1) + "s" : "");
  }
  return el("div", { class: cls, "data-replica": topic + "/" + p.partition + "/" + r.id, "data-in-isr": r.in_isr, "data-leo": known ? r.leo : "" },
    el("span", { class: "who" }, (r.leader ? "★ " : "") + r.id),
    el("div", { class: "track", title: info },
      el("div", { class: "bar", style: known ? "width:" + width.toFixed(2) + "%" : null }),
      p.hw !== undefined && scale > 0 ? el("div", { class: "hw", style: "left:" + Math.min(100, (100 * p.hw) / scale).toFixed(2) + "%" }) : null),
    el("span", {}, info, r.in_isr ? "" : " · out of ISR"));
}

function renderTopics() {
  const root = $("topics");
  const showInternal = $("internal").checked;
  root.replaceChildren();
  const topics = state.topics.filter((t) => showInternal || !t.internal);
  if (topics.length === 0) root.append(el("div", { class: "empty" }, "No topics."));
  for (const t of topics) {
    const tbody = el("tbody");
    for (const p of t.partitions) {
      let scale = p.hw || 0;
      for (const r of p.replicas) if (r.leo) scale = Math.max(scale, r.leo);
      tbody.append(el("tr", { "data-partition": t.name + "/" + p.partition, "data-leader": p.leader, "data-isr": p.isr.join(",") },
        el("td", { class: "num" }, p.partition),
        el("td", {}, p.leader >= 0 ? String(p.leader) : badge("offline", "bad")),
        el("td", { class: "num" }, p.leader_epoch),
        el("td", { class: "num" }, fmt(p.hw)),
        el("td", { class: "num" }, fmt(p.lso), p.lso !== undefined && p.hw !== undefined && p.lso < p.hw ? [" ", badge("−" + fmt(p.hw - p.lso) + " txn", "warn")] : null),
        el("td", {}, "[" + p.isr.join(", ") + "]", p.isr.length < p.replicas.length ? [" ", badge("under-replicated", "bad")] : null),
        el("td", {}, el("div", { class: "replicas" }, p.replicas.map((r) => replicaRow(t.name, p, r, scale)))),
        el("td", {}, badge(p.view))));
    }
    root.append(el("div", { class: "topic", "data-topic": t.name },
      el("h3", {}, t.name, t.internal ? [" ", badge("internal")] : null),
      el("table", {}, el("thead", {}, el("tr", {}, ["partition", "leader", "epoch", "HW", "LSO", "ISR", "replicas (LEO, HW line)", "offsets from"].map((h) => el("th", {}, h)))), tbody)));
  }
}

function renderGroups() {
  const root = $("groups");
  root.replaceChildren();
  if (!state.groups || state.groups.length === 0) {
    root.append(el("div", { class: "empty" }, "No consumer groups coordinated by this broker."));
    return;
  }
  const tbody = el("tbody");
  for (const g of state.groups) {
    const parts = g.partitions || [];
    if (parts.length === 0) tbody.append(el("tr", { "data-group": g.id }, el("td", {}, g.id), el("td", {}, g.state), el("td", { colspan: 4, class: "empty" }, "no committed offsets")));
    for (const gp of parts) {
      tbody.append(el("tr", { "data-group": g.id },
        el("td", {}, g.id), el("td", {}, g.state), el("td", {}, gp.topic + "-" + gp.partition),
        el("td", { class: "num" }, fmt(gp.committed)), el("td", { class: "num" }, fmt(gp.hw)), el("td", { class: "num" }, fmt(gp.lag))));
    }
  }
  root.append(el("table", {}, el("thead", {}, el("tr", {}, ["group", "state", "partition", "committed", "HW", "lag"].map((h) => el("th", {}, h)))), tbody));
}

function renderTxns() {
  const root = $("txns");
  root.replaceChildren();
  if (!state.transactions || state.transactions.length === 0) {
    root.append(el("div", { class: "empty" }, "No open transactions on partitions this broker leads."));
    return;
  }
  const tbody = el("tbody");
  for (const x of state.transactions) {
    tbody.append(el("tr", { "data-txn": x.topic + "/" + x.partition + "/" + x.producer_id },
      el("td", {}, x.topic + "-" + x.partition), el("td", { class: "num" }, x.producer_id + " (epoch " + x.epoch + ")"),
      el("td", { class: "num" }, fmt(x.first_offset)),
      el("td", {}, "LSO " + fmt(x.lso) + " < HW " + fmt(x.hw) + ": " + fmt(x.held) + " records hidden from read_committed consumers")));
  }
  root.append(el("table", {}, el("thead", {}, el("tr", {}, ["partition", "producer", "first offset", "LSO effect"].map((h) => el("th", {}, h)))), tbody));
}

const KIND = {
  isr_shrink: "ISR shrink", isr_expand: "ISR expand", leader_election: "leader election",
  broker_fenced: "broker fenced", broker_unfenced: "broker unfenced", broker_registered: "broker registered",
  log_dir_offline: "log dir offline", topic_created: "topic created", topic_deleted: "topic deleted",
  controller_changed: "controller",
};

function describe(e) {
  const tp = e.topic ? e.topic + (e.kind === "topic_created" || e.kind === "topic_deleted" ? "" : "-" + e.partition) : "";
  switch (e.kind) {
    case "isr_shrink":
    case "isr_expand":
      return tp + ": [" + (e.old_isr || []).join(", ") + "] → [" + (e.new_isr || []).join(", ") + "] — " + e.reason;
    case "leader_election":
      return tp + ": leader " + e.old_leader + " → " + e.new_leader + " (epoch " + e.epoch + ") — " + e.reason;
    case "controller_changed":
      return "controller " + e.old_leader + " → " + e.new_leader + " — " + e.reason;
    case "topic_created":
    case "topic_deleted":
      return tp + " — " + e.reason;
    default:
      return "broker " + e.broker + " — " + e.reason;
  }
}

function renderTimeline() {
  const root = $("timeline");
  root.replaceChildren();
  if (timeline.length === 0) root.append(el("li", { class: "empty" }, "Nothing happened since this broker started."));
  for (let i = timeline.length - 1; i >= 0; i--) {
    const e = timeline[i];
    root.append(el("li", { class: "kind-" + e.kind, "data-event": e.kind, "data-topic": e.topic || null },
      el("span", { class: "t" }, new Date(e.time).toLocaleTimeString("en-GB", { hour12: false })),
      el("span", { class: "k" }, KIND[e.kind] || e.kind),
      el("span", {}, describe(e))));
  }
}

function render() {
  if (!state) return;
  $("cluster").textContent = "cluster " + state.cluster_id + " · console of broker " + state.node + " · metadata offset " + state.metadata_offset;
  renderBrokers();
  renderTopics();
  renderGroups();
  renderTxns();
}

function connect() {
  const es = new EventSource("api/events");
  es.onopen = () => { $("conn").textContent = "live"; $("conn").className = "badge ok"; };
  es.onerror = () => { $("conn").textContent = "reconnecting…"; $("conn").className = "badge off"; };
  es.addEventListener("state", (m) => { state = JSON.parse(m.data); render(); });
  es.addEventListener("timeline", (m) => {
    timeline.length = 0;
    timeline.push(...(JSON.parse(m.data) || []));
    renderTimeline();
  });
  es.addEventListener("events", (m) => {
    timeline.push(...JSON.parse(m.data));
    if (timeline.length > MAX_TIMELINE) timeline.splice(0, timeline.length - MAX_TIMELINE);
    renderTimeline();
  });
}

$("internal").addEventListener("change", render);
connect();
