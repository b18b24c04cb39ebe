#include <hybridjob/scheduler/shell/dashboard.h>

#include <algorithm>
#include <map>
#include <variant>

#include <hybridjob/observability/secure_serving.h>

namespace hybridjob::scheduler {

using nlohmann::json;
namespace obs = observability;

namespace {

std::string NamespaceOfHolder(const std::string& job) {
  const size_t slash = job.find('/');
  return slash == std::string::npos ? std::string() : job.substr(0, slash);
}

}  // namespace

std::set<std::string> NamespacesOf(const DashboardState& state) {
  std::set<std::string> out;
  for (const QueueView& queue : state.queues) {
    for (const WaitingJob& job : queue.waiting) {
      out.insert(job.namespace_name);
    }
    for (const ServedJob& job : queue.served) {
      out.insert(job.namespace_name);
    }
  }
  for (const RunningJob& job : state.running) {
    out.insert(job.namespace_name);
  }
  for (const NodeView& node : state.map.nodes) {
    for (const GpuHolder& holder : node.holders) {
      if (std::string ns = NamespaceOfHolder(holder.job); !ns.empty()) {
        out.insert(std::move(ns));
      }
    }
  }
  return out;
}

DashboardState VisibleState(const DashboardState& state, const DashboardScope& scope) {
  DashboardState out;
  out.at = state.at;
  out.leading = state.leading;
  out.gpus = state.gpus;
  for (const RunningJob& job : state.running) {
    if (scope.Sees(job.namespace_name)) {
      out.running.push_back(job);
    }
  }
  std::set<std::string> queues_in_use;
  for (const RunningJob& job : out.running) {
    queues_in_use.insert(job.queue);
  }
  std::vector<QueueView> queues;
  for (QueueView queue : state.queues) {
    std::erase_if(queue.waiting, [&](const WaitingJob& job) { return !scope.Sees(job.namespace_name); });
    std::erase_if(queue.served, [&](const ServedJob& job) { return !scope.Sees(job.namespace_name); });
    if (!queue.waiting.empty() || !queue.served.empty()) {
      queues_in_use.insert(queue.name);
    }
    queues.push_back(std::move(queue));
  }
  if (!scope.cluster) {
    // The queues its jobs are in, and their ancestors: the tree they hang in.
    std::map<std::string, std::string> parent_of;
    for (const QueueView& queue : queues) {
      parent_of[queue.name] = queue.parent;
    }
    std::set<std::string> keep;
    for (std::string name : queues_in_use) {
      while (!name.empty() && keep.insert(name).second) {
        auto it = parent_of.find(name);
        name = it == parent_of.end() ? std::string() : it->second;
      }
    }
    std::erase_if(queues, [&](const QueueView& queue) { return !keep.contains(queue.name); });
  }
  out.queues = std::move(queues);
  out.map_visible = scope.cluster && state.map_visible;
  if (out.map_visible) {
    out.map = state.map;
    for (NodeView& node : out.map.nodes) {
      std::vector<GpuHolder> holders;
      int64_t hidden = 0;
      for (GpuHolder& holder : node.holders) {
        if (scope.Sees(NamespaceOfHolder(holder.job))) {
          holders.push_back(std::move(holder));
        } else {
          hidden += holder.milli_gpus;
        }
      }
      if (hidden > 0) {
        holders.push_back({std::string(kHiddenHolder), hidden});
      }
      node.holders = std::move(holders);
    }
  }
  return out;
}

json ToJson(const DashboardState& state) {
  json out = {{"at", state.at},
              {"leading", state.leading},
              {"gpuMap", state.map_visible ? ToJson(state.map) : json(nullptr)},
              {"queues", json::array()},
              {"running", json::array()}};
  for (const QueueView& queue : state.queues) {
    out["queues"].push_back(ToJson(queue, state.gpus));
  }
  for (const RunningJob& job : state.running) {
    out["running"].push_back(ToJson(job));
  }
  return out;
}

namespace {

const char* const kJsonType = "application/json";

obs::HttpReply JsonError(int status, const std::string& message) {
  return {status, kJsonType, json({{"error", message}}).dump()};
}

// A refusal (401, 403, 503) with its message as JSON and its headers.
obs::HttpReply JsonRefusal(const obs::HttpReply& refusal) {
  std::string message = refusal.body;
  while (!message.empty() && message.back() == '\n') {
    message.pop_back();
  }
  obs::HttpReply reply = JsonError(refusal.status, message);
  reply.headers = refusal.headers;
  return reply;
}

// What the caller may see, or why it may see nothing.
std::variant<DashboardScope, obs::HttpReply> ScopeOf(obs::AccessReviewer& reviewer,
                                                     const obs::Caller& caller,
                                                     const DashboardState& state) {
  auto ask = [&](const obs::AccessCheck& check) { return obs::Allowed(&reviewer, caller, check); };
  DashboardScope scope;
  auto nodes = ask(obs::AccessCheck::Resource("list", "", "nodes"));
  if (!nodes.ok()) {
    return obs::ReviewFailedReply(nodes.status());
  }
  scope.cluster = *nodes;
  auto all = ask(obs::AccessCheck::Resource("list", "batch.hybridjob.io", "hybridjobs"));
  if (!all.ok()) {
    return obs::ReviewFailedReply(all.status());
  }
  scope.all_namespaces = *all;
  if (!scope.all_namespaces) {
    for (const std::string& ns : NamespacesOf(state)) {
      auto allowed = ask(obs::AccessCheck::Resource("list", "batch.hybridjob.io", "hybridjobs", ns));
      if (!allowed.ok()) {
        return obs::ReviewFailedReply(allowed.status());
      }
      if (*allowed) {
        scope.namespaces.insert(ns);
      }
    }
  }
  if (!scope.cluster && !scope.all_namespaces && scope.namespaces.empty()) {
    return obs::ForbiddenReply(caller,
                               "list nodes, nor list hybridjobs.batch.hybridjob.io in any namespace "
                               "with jobs on the dashboard");
  }
  return scope;
}

}  // namespace

void AddDashboardEndpoints(obs::HttpServer& server,
                           std::function<std::shared_ptr<const DashboardState>()> latest,
                           std::shared_ptr<obs::AccessReviewer> reviewer) {
  server.Handle("/", [reviewer](const obs::HttpRequest& request) {
    obs::HttpReply page{200, "text/html; charset=utf-8", std::string(DashboardPage())};
    auto caller = obs::Authenticate(reviewer.get(), request);
    if (auto* refusal = std::get_if<obs::HttpReply>(&caller)) {
      // The page holds no data: a browser shows it with the 401 and asks
      // for a token.
      page.status = refusal->status;
      page.headers = refusal->headers;
    }
    return page;
  });
  server.Handle("/api/state", [latest = std::move(latest),
                               reviewer = std::move(reviewer)](const obs::HttpRequest& request) {
    auto caller = obs::Authenticate(reviewer.get(), request);
    if (auto* refusal = std::get_if<obs::HttpReply>(&caller)) {
      return JsonRefusal(*refusal);
    }
    std::shared_ptr<const DashboardState> state = latest();
    if (!state) {
      return JsonError(503, "the scheduler's caches are not synced yet");
    }
    if (!reviewer) {
      return obs::HttpReply{200, kJsonType, ToJson(*state).dump()};
    }
    auto scope = ScopeOf(*reviewer, std::get<obs::Caller>(caller), *state);
    if (auto* refusal = std::get_if<obs::HttpReply>(&scope)) {
      return JsonRefusal(*refusal);
    }
    return obs::HttpReply{200, kJsonType,
                          ToJson(VisibleState(*state, std::get<DashboardScope>(scope))).dump()};
  });
}

std::string_view DashboardPage() {
  static constexpr std::string_view kPage = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>HybridJob gang-scheduler</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1d2330; background: #f7f8fa; }
  h1 { font-size: 1.3em; margin: 0 0 .2em; }
  h2 { font-size: 1.05em; margin: 1.4em 0 .5em; }
  #status { color: #5a6275; }
  table { border-collapse: collapse; background: #fff; }
  th, td { text-align: left; padding: .3em .8em; border-bottom: 1px solid #e3e6ec; vertical-align: top; }
  th { font-weight: 600; background: #eef0f4; }
  .bar { position: relative; width: 160px; height: 12px; background: #e3e6ec; border-radius: 3px; }
  .bar .used { position: absolute; left: 0; top: 0; bottom: 0; background: #3b7dd8; border-radius: 3px; }
  .bar .mark { position: absolute; top: -3px; bottom: -3px; width: 2px; background: #1d2330; }
  .bar .max { position: absolute; top: -3px; bottom: -3px; width: 2px; background: #c0392b; }
  .reason { font-weight: 600; }
  .NeverFits { color: #c0392b; }
  .message { color: #5a6275; max-width: 60em; }
  .domain { display: inline-block; vertical-align: top; margin: 0 1em 1em 0; padding: .5em;
            background: #fff; border: 1px solid #d5d9e1; border-radius: 4px; }
  .domain h3 { font-size: .95em; margin: 0 0 .4em; }
  .legend span { display: inline-block; margin-right: 1em; }
  .legend i { display: inline-block; width: 10px; height: 10px; margin-right: .3em; }
</style>
</head>
<body>
<h1>HybridJob gang-scheduler</h1>
<div id="status">loading…</div>
<form id="login" hidden>
<p>The dashboard shows what your token may see: the jobs of namespaces where it may list
hybridjobs, and the GPU map and every queue when it may list nodes. Paste a bearer token
(for example from <code>kubectl create token NAME</code>) or open this page as
<code>…/#token=TOKEN</code>. It is kept in this tab only.</p>
<input id="token" type="password" size="60" autocomplete="off" placeholder="bearer token">
<button type="submit">Show</button>
</form>
<h2>Queues</h2>
<table id="queues"><thead><tr><th>Queue</th><th>Parent</th><th>Weight</th><th>Order</th>
<th>GPUs used / guaranteed / max</th><th>Fair share</th><th></th><th>Used</th><th>Waiting</th></tr></thead><tbody></tbody></table>
<h2>Waiting jobs</h2>
<table id="waiting"><thead><tr><th>Job</th><th>Queue</th><th>Position</th><th>Reason</th><th>Why</th></tr></thead><tbody></tbody></table>
<h2>Running jobs</h2>
<table id="running"><thead><tr><th>Job</th><th>Queue</th><th>Members</th><th>GPUs</th></tr></thead><tbody></tbody></table>
<h2>GPU map</h2>
<div id="summary"></div>
<div id="legend" class="legend"></div>
<div id="map"></div>
<script>
"use strict";
function el(tag, attrs, children) {
  const node = tag === "svg" || tag === "rect" || tag === "text" || tag === "title"
      ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const child of children || []) {
    node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}
function row(cells) { return el("tr", {}, cells.map(c => el("td", {}, [c]))); }
function num(text) { const n = parseFloat(text); return isNaN(n) ? 0 : n; }
const palette = ["#3b7dd8", "#e67e22", "#27ae60", "#8e44ad", "#16a085", "#d35400", "#2c3e50",
                 "#c0392b", "#7f8c8d", "#f1c40f", "#1abc9c", "#9b59b6"];
function colour(job) {
  let h = 0;
  for (const ch of job) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return palette[h % palette.length];
}
function bar(used, guaranteed, max) {
  const scale = Math.max(used, guaranteed, max || 0, 1);
  const b = el("div", {class: "bar"});
  b.appendChild(el("div", {class: "used", style: "width:" + (100 * used / scale) + "%"}));
  if (guaranteed > 0) b.appendChild(el("div", {class: "mark", style: "left:" + (100 * guaranteed / scale) + "%", title: "guaranteed"}));
  if (max) b.appendChild(el("div", {class: "max", style: "left:calc(" + (100 * max / scale) + "% - 2px)", title: "max"}));
  return b;
}
function resources(list) {
  const parts = Object.entries(list || {}).map(([k, v]) => k + "=" + v);
  return parts.length ? parts.join(" ") : "-";
}
function render(state) {
  document.getElementById("login").hidden = true;
  document.getElementById("status").textContent =
      "as of " + state.at + (state.leading ? "" : " (standby replica: no cycles, cache only)");
  const queues = document.querySelector("#queues tbody");
  const waiting = document.querySelector("#waiting tbody");
  queues.replaceChildren(); waiting.replaceChildren();
  for (const q of state.queues) {
    const used = num(q.gpusUsed), guaranteed = num(q.gpusGuaranteed);
    const max = q.gpusMax === undefined ? 0 : num(q.gpusMax);
    queues.appendChild(row([q.name + (q.configured ? "" : " (not configured)"), q.parent || "-",
        String(q.weight), q.leaf ? q.order : "-",
        used + " / " + (guaranteed || "-") + " / " + (q.gpusMax === undefined ? "unlimited" : max),
        q.gpusFair, bar(used, guaranteed, max), resources(q.used), String(q.waiting.length)]));
    for (const w of q.waiting) {
      const reason = el("span", {class: "reason " + w.reason}, [w.reason]);
      waiting.appendChild(row([w.namespace + "/" + w.name, q.name, w.position ? String(w.position) : "-",
          reason, el("span", {class: "message"}, [w.message || ""])]));
    }
  }
  const running = document.querySelector("#running tbody");
  running.replaceChildren();
  for (const j of state.running) {
    running.appendChild(row([j.namespace + "/" + j.name, j.queue, String(j.members), j.gpus]));
  }
  const map = state.gpuMap;
  const container = document.getElementById("map");
  const legend = document.getElementById("legend");
  if (!map) {
    document.getElementById("summary").textContent =
        "The GPU map and the other queues need a token that may list nodes.";
    container.replaceChildren(); legend.replaceChildren();
    return;
  }
  document.getElementById("summary").textContent = "GPUs: " + map.gpus + ", " + map.usedGpus +
      " used; free in pieces on nodes in use: " + map.freeGpusInPieces +
      "; the most free on one node: " + map.largestFreeOnANode;
  const holders = new Set();
  const groups = new Map();
  for (const node of map.nodes) {
    const key = map.levels.map(l => (node.domains[l] || "-")).join(" / ") || "cluster";
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(node);
  }
  container.replaceChildren();
  for (const [key, nodes] of groups) {
    const box = el("div", {class: "domain"}, [el("h3", {}, [key])]);
    const cell = 14, gap = 3, label = 110;
    const width = label + Math.max(...nodes.map(n => Math.ceil(num(n.gpus)))) * (cell + gap) + 10;
    const svg = el("svg", {width: width, height: nodes.length * (cell + 8) + 4, class: "nodes"});
    nodes.forEach((node, i) => {
      const y = 2 + i * (cell + 8);
      svg.appendChild(el("text", {x: 0, y: y + cell - 2, "font-size": 11,
          fill: node.ready && node.schedulable ? "#1d2330" : "#c0392b"}, [node.name]));
      const slots = [];
      for (const h of node.jobs) {
        holders.add(h.job);
        for (let k = 0; k < Math.round(num(h.gpus)); k++) slots.push(h.job);
      }
      for (let g = 0; g < Math.ceil(num(node.gpus)); g++) {
        const job = slots[g];
        const rect = el("rect", {x: label + g * (cell + gap), y: y, width: cell, height: cell, rx: 2,
            class: job ? "gpu used" : "gpu free", fill: job ? colour(job) : "#fff",
            stroke: job ? "none" : "#9aa3b2"});
        rect.appendChild(el("title", {}, [node.name + ": " + (job || "free")]));
        svg.appendChild(rect);
      }
    });
    box.appendChild(svg);
    container.appendChild(box);
  }
  legend.replaceChildren();
  for (const job of [...holders].sort()) {
    legend.appendChild(el("span", {}, [el("i", {style: "background:" + colour(job)}), job]));
  }
}
// A token given as #token=... moves to this tab's storage and out of the
// address bar (and so out of the history).
const fromAddress = new URLSearchParams(location.hash.slice(1)).get("token");
if (fromAddress) {
  sessionStorage.setItem("token", fromAddress);
  history.replaceState(null, "", location.pathname + location.search);
}
document.getElementById("login").addEventListener("submit", event => {
  event.preventDefault();
  sessionStorage.setItem("token", document.getElementById("token").value.trim());
  refresh();
});
async function refresh() {
  try {
    const token = sessionStorage.getItem("token");
    const headers = token ? {Authorization: "Bearer " + token} : {};
    const reply = await fetch("api/state", {cache: "no-store", headers: headers});
    if (reply.ok) { render(await reply.json()); return; }
    let why = "";
    try { why = (await reply.json()).error || ""; } catch (e) {}
    document.getElementById("status").textContent =
        "the scheduler answered " + reply.status + (why ? ": " + why : "");
    if (reply.status === 401) document.getElementById("login").hidden = false;
  } catch (e) {
    document.getElementById("status").textContent = "cannot reach the scheduler: " + e;
  }
}
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>
)HTML";
  return kPage;
}

}  // namespace hybridjob::scheduler
