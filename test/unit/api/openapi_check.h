// Test support: the subset of CRD OpenAPI v3 schema checking the API server
// applies, enough to prove manifests and the CRD agree.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hybridjob::testing {

// Problems of `value` against `schema` (type, required, enum, bounds, lengths,
// patterns, list-type uniqueness). Fields the schema does not declare count
// as problems unless x-kubernetes-preserve-unknown-fields allows them: the API
// server would silently prune them, which a manifest never wants.
std::vector<std::string> SchemaProblems(const nlohmann::json& value, const nlohmann::json& schema,
                                        const std::string& path = "");

// Violations of the structural-schema rules for apiextensions.k8s.io/v1:
// every node typed (or int-or-string / preserve-unknown-fields), anyOf only for
// int-or-string, map-list keys required, defaults valid against their schema.
std::vector<std::string> StructuralProblems(const nlohmann::json& schema,
                                            const std::string& path = "");

}  // namespace hybridjob::testing
