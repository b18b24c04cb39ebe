// Fuzzes what the controller does with a HybridJob it reads: parse (strict and
// lenient), validate, default, serialise. Input is JSON, or YAML when it is not
// JSON, as a manifest on disk would be.
//
// Besides crashes and undefined behaviour it checks the contracts of api/:
// a strictly accepted object is accepted leniently too, defaulting is
// idempotent, defaulting keeps a valid job valid, and a parsed job survives a
// round trip through its JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/json.h>
#include <hybridjob/api/validation.h>

#include "yaml_json.h"

namespace {

using hybridjob::Result;
using nlohmann::json;
namespace api = hybridjob::api;

[[noreturn]] void Fail(const std::string& what, const json& detail) {
  std::cerr << "contract broken: " << what << "\n" << detail.dump(2) << "\n";
  std::abort();
}

// The document as the API server would hand it over, if it is one.
bool Decode(const std::string& text, json* out) {
  *out = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!out->is_discarded()) {
    return true;
  }
  try {
    *out = hybridjob::testing::YamlToJson(text);
    return true;
  } catch (const std::exception&) {
    return false;  // not YAML either: nothing to parse
  }
}

void CheckJob(const json& object) {
  api::ParseOptions strict_options;
  strict_options.reject_unknown_fields = true;
  Result<api::HybridJob> strict = api::ParseHybridJob(object, strict_options);
  Result<api::HybridJob> lenient = api::ParseHybridJob(object);
  if (strict.ok() && !lenient.ok()) {
    Fail("strictly valid but leniently rejected: " + lenient.status().ToString(), object);
  }
  // What a controller reports on for an object whose spec does not parse.
  (void)api::ParseObjectMeta(object);
  if (object.is_object() && object.contains("status")) {
    (void)api::ParseHybridJobStatus(object["status"]);
  }
  if (!lenient.ok()) {
    return;
  }

  api::HybridJob job = *lenient;
  const bool valid = api::Validate(job).empty();
  api::ApplyDefaults(job);
  const std::vector<api::FieldError> defaulted_errors = api::Validate(job);
  if (valid && !defaulted_errors.empty()) {
    Fail("defaulting made a valid job invalid: " + api::JoinErrors(defaulted_errors), object);
  }
  const json defaulted = api::ToJson(job);
  api::ApplyDefaults(job);
  if (api::ToJson(job) != defaulted) {
    Fail("defaulting is not idempotent", object);
  }

  Result<api::HybridJob> reparsed = api::ParseHybridJob(defaulted, strict_options);
  if (!reparsed.ok()) {
    Fail("own JSON does not parse back: " + reparsed.status().ToString(), defaulted);
  }
  if (api::ToJson(*reparsed) != defaulted) {
    Fail("round trip through JSON changed the job", defaulted);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  json object;
  if (Decode(std::string(reinterpret_cast<const char*>(data), size), &object)) {
    CheckJob(object);
  }
  return 0;
}
