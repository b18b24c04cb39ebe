// Bad input: every malformed HybridJob of the corpus is applied with kubectl
// to the real system, and each must end as its file says — refused by the API
// server with the expected message and nothing stored, or stored and marked
// Invalid by the controller (condition, Event, no pods). The binaries must
// survive the lot and still run a valid job to the end.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "system.h"

namespace hybridjob::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

enum class Outcome { kRefused, kInvalid };

struct Case {
  std::string file;  // corpus file name
  std::string path;
  Outcome outcome = Outcome::kRefused;
  std::string message;  // substring of the API server's or the Invalid condition's message
};

// The first line of each corpus file: `# expect: refused|invalid <message substring>`.
Result<Case> ReadCase(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string first_line;
  std::getline(in, first_line);
  const std::string prefix = "# expect: ";
  if (first_line.rfind(prefix, 0) != 0) {
    return Status(StatusCode::kInvalidArgument,
                  path.filename().string() + ": first line must be `# expect: ...`");
  }
  const std::string expectation = first_line.substr(prefix.size());
  const size_t space = expectation.find(' ');
  const std::string kind = expectation.substr(0, space);
  Case parsed;
  parsed.file = path.filename().string();
  parsed.path = path.string();
  parsed.message = space == std::string::npos ? "" : expectation.substr(space + 1);
  if (kind == "refused") {
    parsed.outcome = Outcome::kRefused;
  } else if (kind == "invalid") {
    parsed.outcome = Outcome::kInvalid;
  } else {
    return Status(StatusCode::kInvalidArgument,
                  parsed.file + ": expected outcome must be refused or invalid, got " + kind);
  }
  if (parsed.message.empty()) {
    return Status(StatusCode::kInvalidArgument, parsed.file + ": names no expected message");
  }
  return parsed;
}

std::vector<Case> ReadCorpus() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(SourceDir() + "/test/fault/bad_input/corpus")) {
    if (entry.path().extension() == ".yaml") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<Case> cases;
  for (const auto& file : files) {
    auto parsed = ReadCase(file);
    if (!parsed) {
      ADD_FAILURE() << parsed.status().message();
      continue;
    }
    cases.push_back(*parsed);
  }
  return cases;
}

std::vector<json> List(System& system, const k8s::Resource& resource, const std::string& ns) {
  auto list = system.client().List(resource, ns, {});
  return list ? list->items : std::vector<json>{};
}

const json* FindCondition(const json& job, const std::string& type) {
  if (!job.contains("status") || !job["status"].contains("conditions")) {
    return nullptr;
  }
  for (const json& condition : job["status"]["conditions"]) {
    if (condition.value("type", "") == type) {
      return &condition;
    }
  }
  return nullptr;
}

bool HasInvalidEvent(System& system, const std::string& ns, const std::string& job) {
  for (const json& event : List(system, k8s::resources::Events(), ns)) {
    const json& object = event["involvedObject"];
    if (object.value("kind", "") == "HybridJob" && object.value("name", "") == job &&
        event.value("reason", "") == "Invalid" && event.value("type", "") == "Warning") {
      return true;
    }
  }
  return false;
}

constexpr const char* kValidJob = R"(apiVersion: batch.hybridjob.io/v1alpha1
kind: HybridJob
metadata:
  name: still-works
  namespace: NAMESPACE
spec:
  framework: pytorch
  replicaSpecs:
    - name: worker
      minReplicas: 2
      template:
        metadata:
          annotations:
            sim.hybridjob.io/duration: "2s"
        spec:
          containers:
            - name: main
              image: trainer:latest
              resources:
                limits:
                  nvidia.com/gpu: 1
)";

TEST(BadInputFaultTest, CorpusIsRefusedOrMarkedInvalidAndTheBinariesStayUp) {
  const std::vector<Case> cases = ReadCorpus();
  ASSERT_GE(cases.size(), 30u) << "the corpus must hold at least 30 malformed jobs";
  System system;
  ASSERT_TRUE(system.ok());

  // Every case in a namespace of its own, so its job, Events and pods are its alone.
  std::vector<std::unique_ptr<TestNamespace>> namespaces;
  for (size_t i = 0; i < cases.size(); ++i) {
    namespaces.push_back(std::make_unique<TestNamespace>(system.client(), "bad"));
  }

  // Apply everything first, so the controller sees the whole corpus at once.
  // Client-side validation is off: the API server is the layer under test.
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const std::string& ns = namespaces[i]->name();
    std::string output;
    const int exit_code =
        system.Kubectl("apply --validate=false -n " + ns + " -f " + c.path, &output);
    if (c.outcome == Outcome::kRefused) {
      EXPECT_NE(exit_code, 0) << c.file << ": the API server accepted it:\n" << output;
      EXPECT_NE(output.find(c.message), std::string::npos)
          << c.file << ": refused without the expected message \"" << c.message << "\":\n"
          << output;
      EXPECT_TRUE(List(system, k8s::resources::HybridJobs(), ns).empty())
          << c.file << ": refused, yet a HybridJob is stored";
    } else {
      EXPECT_EQ(exit_code, 0) << c.file << ": expected the API server to accept it:\n" << output;
    }
  }

  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    if (c.outcome != Outcome::kInvalid) {
      continue;
    }
    const std::string& ns = namespaces[i]->name();
    const std::vector<json> jobs = List(system, k8s::resources::HybridJobs(), ns);
    if (jobs.size() != 1) {
      ADD_FAILURE() << c.file << ": expected one stored HybridJob, found " << jobs.size();
      continue;
    }
    const std::string name = jobs[0]["metadata"].value("name", "");
    json job;
    const bool marked = WaitFor(
        [&] {
          job = system.Job(name, ns);
          const json* invalid = FindCondition(job, "Invalid");
          return invalid != nullptr && invalid->value("status", "") == "True";
        },
        30s);
    if (!marked) {
      ADD_FAILURE() << c.file << ": accepted silently, never marked Invalid; status: "
                    << (job.contains("status") ? job["status"].dump() : "none");
      continue;
    }
    const std::string message = FindCondition(job, "Invalid")->value("message", "");
    EXPECT_NE(message.find(c.message), std::string::npos)
        << c.file << ": Invalid without the expected message \"" << c.message << "\": " << message;
    EXPECT_EQ(job["status"].value("phase", ""), "Failed") << c.file;
    EXPECT_TRUE(WaitFor([&] { return HasInvalidEvent(system, ns, name); }, 30s))
        << c.file << ": no Invalid Event on the job";
    EXPECT_TRUE(List(system, k8s::resources::Pods(), ns).empty())
        << c.file << ": an invalid job got pods";
  }

  EXPECT_TRUE(system.controller().Running()) << "the controller died:\n" << system.Logs();
  EXPECT_TRUE(system.scheduler().Running()) << "the scheduler died:\n" << system.Logs();

  // And they still do their job.
  TestNamespace ns(system.client(), "after-bad");
  std::string manifest = kValidJob;
  manifest.replace(manifest.find("NAMESPACE"), 9, ns.name());
  std::string output;
  ASSERT_EQ(system.Apply(manifest, &output), 0) << output;
  EXPECT_TRUE(WaitFor([&] { return system.Phase("still-works", ns.name()) == "Succeeded"; }, 90s))
      << "phase " << system.Phase("still-works", ns.name()) << "\n"
      << system.Logs();
}

}  // namespace
}  // namespace hybridjob::testing
