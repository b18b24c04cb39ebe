#include "crd.h"

#include <exception>

#include <hybridjob/k8s/api_status.h>

#include "test_cluster.h"
#include "yaml_json.h"

namespace hybridjob::testing {
namespace {

constexpr const char* kCrdName = "hybridjobs.batch.hybridjob.io";

bool Established(const nlohmann::json& crd) {
  if (!crd.contains("status") || !crd["status"].contains("conditions")) {
    return false;
  }
  for (const auto& condition : crd["status"]["conditions"]) {
    if (condition.value("type", "") == "Established" && condition.value("status", "") == "True") {
      return true;
    }
  }
  return false;
}

}  // namespace

Status EnsureHybridJobCrd(k8s::ApiClient& client, std::chrono::milliseconds timeout) {
  nlohmann::json crd;
  try {
    crd = YamlToJson(ReadFile(SourcePath("crds/batch.hybridjob.io_hybridjobs.yaml")));
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("reading the CRD: ") + e.what());
  }
  auto created = client.Create(k8s::resources::CustomResourceDefinitions(), "", crd);
  if (!created.ok() && !k8s::IsAlreadyExists(created.status())) {
    return created.status();
  }
  const bool served = WaitFor(
      [&] {
        auto current = client.Get(k8s::resources::CustomResourceDefinitions(), "", kCrdName);
        return current.ok() && Established(*current) &&
               client.List(k8s::resources::HybridJobs(), "default", {}).ok();
      },
      timeout);
  if (!served) {
    return Status(StatusCode::kTimeout,
                  std::string("the CRD ") + kCrdName + " was not served in time");
  }
  return Status::Ok();
}

}  // namespace hybridjob::testing
