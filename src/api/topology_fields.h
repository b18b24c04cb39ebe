// The one reader and writer of a topology object ({"level": ..., "mode": ...}),
// shared by the HybridJob's JSON (spec.topology, a role's topology) and the
// group-spec annotation's. Private to the api library.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <hybridjob/api/types.h>
#include <hybridjob/common/json_fields.h>

namespace hybridjob::api {

// parent["topology"], mode defaulting to Required; nullopt when absent. Errors
// go to `fields` with the member's path; the caller adds its own checks.
inline std::optional<TopologySpec> ReadTopologyMember(JsonFields& fields,
                                                      const nlohmann::json& parent,
                                                      const std::string& parent_path,
                                                      bool reject_unknown_keys) {
  const nlohmann::json* object = fields.Object(parent, "topology", parent_path);
  if (object == nullptr) {
    return std::nullopt;
  }
  const std::string path = JoinPath(parent_path, "topology");
  if (reject_unknown_keys) {
    fields.CheckKnown(*object, {"level", "mode"}, path);
  }
  TopologySpec topology;
  topology.level = fields.String(*object, "level", path).value_or("");
  topology.mode =
      fields.Enumerated<TopologyMode>(*object, "mode", path, ParseTopologyMode, AllTopologyModes())
          .value_or(TopologyMode::kRequired);
  return topology;
}

// The object for `topology`: level (when set), then mode. Json is
// nlohmann::json for the HybridJob, ordered_json for the annotation.
template <typename Json>
Json TopologyObject(const TopologySpec& topology) {
  Json out = Json::object();
  if (!topology.level.empty()) {
    out["level"] = topology.level;
  }
  out["mode"] = ToString(topology.mode);
  return out;
}

}  // namespace hybridjob::api
