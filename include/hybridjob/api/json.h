// HybridJob <-> JSON, as the API server stores it.
//
// Parsing reports every structural problem it finds, each naming its field path
// ("spec.replicaSpecs[1].minReplicas: must be an integer"). Semantic checks that
// need the whole object live in validation.h. JSON library exceptions never
// leave these functions.
#pragma once

#include <nlohmann/json.hpp>

#include <hybridjob/api/types.h>
#include <hybridjob/common/status.h>

namespace hybridjob::api {

struct ParseOptions {
  // Report fields the schema does not define. The API server prunes them, so
  // objects read from it never have any; manifests on disk might (typos).
  bool reject_unknown_fields = false;
};

// A HybridJob object (apiVersion, kind, metadata, spec, status). The status is
// read leniently: it is the controller's own bookkeeping, and a malformed value
// there is dropped rather than failing the job.
Result<HybridJob> ParseHybridJob(const nlohmann::json& object, const ParseOptions& options = {});

// The metadata alone, leniently: enough to report on an object whose spec does
// not parse.
ObjectMeta ParseObjectMeta(const nlohmann::json& object);

HybridJobStatus ParseHybridJobStatus(const nlohmann::json& status);

nlohmann::json ToJson(const ObjectMeta& metadata);
nlohmann::json ToJson(const HybridJobSpec& spec);
nlohmann::json ToJson(const HybridJobStatus& status);
// The whole object, with apiVersion and kind.
nlohmann::json ToJson(const HybridJob& job);

}  // namespace hybridjob::api
