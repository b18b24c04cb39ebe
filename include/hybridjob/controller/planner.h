// The controller's decisions for one HybridJob, as a pure function:
//   (job, observed children, now) -> plan (ordered actions + requeue delay).
//
// Level-based and idempotent: the plan moves the world toward the desired state
// from whatever state it observes, and planning again on the world the plan
// produced yields no actions. The status a plan writes is the status of the
// world after its actions are applied.
#pragma once

#include <chrono>

#include <nlohmann/json.hpp>

#include <hybridjob/api/time.h>
#include <hybridjob/api/types.h>
#include <hybridjob/controller/actions.h>
#include <hybridjob/controller/observed.h>
#include <hybridjob/controller/options.h>

namespace hybridjob::controller {

// The HybridJob as read from the API server. A job that does not parse is
// reported through status (Invalid) and an Event, never by failing.
Plan PlanJob(const nlohmann::json& job_object, const Observed& observed, api::TimePoint now,
             const PlannerOptions& options = {});

// Same, for a parsed job (defaults need not be applied).
Plan PlanJob(const api::HybridJob& job, const Observed& observed, api::TimePoint now,
             const PlannerOptions& options = {});

// Delay before the member replacing the `restart_count`-th restart is created.
std::chrono::seconds RestartBackoff(int32_t restart_count, const PlannerOptions& options);

}  // namespace hybridjob::controller
