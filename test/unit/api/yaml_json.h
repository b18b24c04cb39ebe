// Test support: YAML manifests as the JSON the API server would store.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hybridjob::testing {

// Plain scalars resolve as YAML 1.2's core schema does (null, true/false,
// integers, floats, else strings); quoted and block scalars stay strings.
// Throws YAML::Exception on malformed input.
nlohmann::json YamlToJson(const std::string& text);
// Every document of a multi-document stream.
std::vector<nlohmann::json> YamlDocumentsToJson(const std::string& text);

// The file's bytes; throws std::runtime_error when it cannot be read.
std::string ReadFile(const std::string& path);

// A path inside the source tree.
std::string SourcePath(const std::string& relative);

}  // namespace hybridjob::testing
