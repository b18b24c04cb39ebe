// The gang-scheduler's read-only web dashboard: queues with their usage
// against guarantees and ceilings, running and waiting jobs with their
// reasons, and the GPU map by topology domain. The loop publishes a
// DashboardState (plain data, at most once a second); the page is one HTML
// document with its script, served from the binary, that polls /api/state.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/observability/http_server.h>
#include <hybridjob/scheduler/core/cluster_view.h>

namespace hybridjob::scheduler {

struct DashboardState {
  std::string at;        // when the loop published it (RFC 3339)
  bool leading = false;  // this replica schedules (a standby shows its cache only)
  GpuResources gpus;
  GpuMap map;
  std::vector<QueueView> queues;  // with the groups waiting to start, from the last cycle
  std::vector<RunningJob> running;
};

// The shape /api/state serves.
nlohmann::json ToJson(const DashboardState& state);

// The page: HTML, CSS and script in one document, no external assets.
std::string_view DashboardPage();

// GET / (the page) and GET /api/state (the latest state, 503 before the first).
void AddDashboardEndpoints(observability::HttpServer& server,
                           std::function<std::shared_ptr<const DashboardState>()> latest);

}  // namespace hybridjob::scheduler
