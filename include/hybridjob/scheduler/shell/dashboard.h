// The gang-scheduler's read-only web dashboard: queues with their usage
// against guarantees and ceilings, running and waiting jobs with their
// reasons, and the GPU map by topology domain. The loop publishes a
// DashboardState (plain data, at most once a second); the page is one HTML
// document with its script, served from the binary, that polls /api/state.
//
// Who sees what: every request carries a bearer token, reviewed by the API
// server. A caller sees the jobs of the namespaces where it may `list`
// hybridjobs; the cluster-wide views (the GPU map, every queue) need `list`
// nodes. The page itself holds no data: without a token it answers 401 with
// a form that asks for one.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/observability/access_review.h>
#include <hybridjob/observability/http_server.h>
#include <hybridjob/scheduler/core/cluster_view.h>

namespace hybridjob::scheduler {

struct DashboardState {
  std::string at;        // when the loop published it (RFC 3339)
  bool leading = false;  // this replica schedules (a standby shows its cache only)
  GpuResources gpus;
  GpuMap map;
  bool map_visible = true;        // false: the caller may not see nodes
  std::vector<QueueView> queues;  // with the groups waiting to start, from the last cycle
  std::vector<RunningJob> running;
};

// What one caller may see.
struct DashboardScope {
  bool all_namespaces = false;       // may list hybridjobs in every namespace
  std::set<std::string> namespaces;  // else, the namespaces where it may
  bool cluster = false;              // may list nodes: the GPU map and every queue

  bool Sees(const std::string& namespace_name) const {
    return all_namespaces || namespaces.contains(namespace_name);
  }
  friend bool operator==(const DashboardScope&, const DashboardScope&) = default;
};

// Every namespace a job or a GPU holder of the state is in.
std::set<std::string> NamespacesOf(const DashboardState& state);

// The state as `scope` sees it: jobs of other namespaces left out (a GPU they
// hold shows as held by "another namespace"); without `cluster`, no GPU map
// and only the queues its jobs are in, with their parents.
DashboardState VisibleState(const DashboardState& state, const DashboardScope& scope);

// What a holder outside the caller's namespaces is shown as.
inline constexpr std::string_view kHiddenHolder = "another namespace";

// The shape /api/state serves.
nlohmann::json ToJson(const DashboardState& state);

// The page: HTML, CSS and script in one document, no external assets.
std::string_view DashboardPage();

// GET / (the page) and GET /api/state (the latest state as the caller may
// see it; 503 before the first). A null reviewer serves everything to anyone
// (--insecure-serving).
void AddDashboardEndpoints(observability::HttpServer& server,
                           std::function<std::shared_ptr<const DashboardState>()> latest,
                           std::shared_ptr<observability::AccessReviewer> reviewer);

}  // namespace hybridjob::scheduler
