// End to end with real processes: hybridjob-sim --exec runs the members'
// commands, so the frameworks' own code meets what the controller hands it.
// The tests of one run of this binary share one system (ctest runs each test
// in a process, and so on a cluster, of its own).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <unistd.h>

#include <gtest/gtest.h>

#include <hybridjob/api/labels.h>

#include "child_process.h"
#include "exec_system_test.h"
#include "system.h"

namespace hybridjob::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// The port a local server printed ("... port 41234 ..."), or "" if it did
// not within 15 s.
std::string ListeningPort(ChildProcess& server) {
  std::smatch match;
  std::string log;
  WaitFor(
      [&] {
        log = server.Log();
        return std::regex_search(log, match, std::regex("port ([0-9]+)"));
      },
      15s);
  return match.empty() ? "" : match[1].str();
}

class ExecEndToEndTest : public ExecSystemTest {
 protected:
  static void SetUpTestSuite() {
    StartSystem({.nodes = 2, .gpus_per_node = 4, .scheduler_config = ""}, {});
  }
};

TEST_F(ExecEndToEndTest, PyTorchDistributedDataParallelTrainsAndSucceeds) {
  std::string output;
  ASSERT_EQ(
      system_->Kubectl("apply -f " + SourceDir() + "/examples/exec/pytorch-ddp.yaml", &output), 0)
      << output;
  ASSERT_TRUE(WaitFor([&] { return system_->Phase("pytorch-ddp") == "Succeeded"; }, 150s))
      << "phase " << system_->Phase("pytorch-ddp") << "\n"
      << Logs("pytorch-ddp-master-0") << "\n"
      << system_->Logs();
  // `kubectl logs` reaches the simulated kubelet through the API server.
  const std::string log = Logs("pytorch-ddp-master-0 -c pytorch");
  std::smatch first;
  std::smatch last;
  ASSERT_TRUE(std::regex_search(log, first, std::regex("step 0 loss ([0-9.]+)"))) << log;
  ASSERT_TRUE(std::regex_search(log, last, std::regex("final loss ([0-9.]+)"))) << log;
  EXPECT_LT(std::stod(last[1]), std::stod(first[1]) / 10) << log;
  EXPECT_NE(log.find("of 4: joining pytorch-ddp-master-0.pytorch-ddp.default.svc:23456"),
            std::string::npos)
      << log;
}

TEST_F(ExecEndToEndTest, TensorflowStyleMembersReachEveryPeerAndThePsGoesAfterSuccess) {
  std::string output;
  ASSERT_EQ(
      system_->Kubectl("apply -f " + SourceDir() + "/examples/exec/tf-ps-worker.yaml", &output), 0)
      << output;
  ASSERT_TRUE(WaitFor([&] { return system_->Phase("tf-ps-worker") == "Succeeded"; }, 120s))
      << "phase " << system_->Phase("tf-ps-worker") << "\n"
      << system_->Logs();
  for (const char* worker : {"tf-ps-worker-worker-0", "tf-ps-worker-worker-1"}) {
    const std::string log = Logs(worker);
    EXPECT_NE(log.find("reached all 2 peers"), std::string::npos) << worker << ":\n" << log;
    EXPECT_NE(log.find("reached by all 2 peers"), std::string::npos) << worker << ":\n" << log;
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& pod : system_->Pods("tf-ps-worker")) {
          if (pod["metadata"]["labels"][std::string(api::kRoleLabel)] == "ps") {
            return false;
          }
        }
        return true;
      },
      30s))
      << "the parameter server outlived the job";
}

TEST_F(ExecEndToEndTest, MpirunOnTheLauncherAllreducesAcrossEveryWorkerOverSsh) {
  std::string output;
  ASSERT_EQ(
      system_->Kubectl("apply -f " + SourceDir() + "/examples/exec/mpi-allreduce.yaml", &output), 0)
      << output;
  ASSERT_TRUE(WaitFor([&] { return system_->Phase("mpi-allreduce") == "Succeeded"; }, 120s))
      << "phase " << system_->Phase("mpi-allreduce") << "\n"
      << Logs("mpi-allreduce-launcher-0 -c hybridjob-wait-for-workers") << "\n"
      << Logs("mpi-allreduce-launcher-0") << "\n"
      << system_->Logs();
  // The launcher waited for each worker's sshd, then mpirun ran a rank on each.
  const std::string waited = Logs("mpi-allreduce-launcher-0 -c hybridjob-wait-for-workers");
  for (int i = 0; i < 4; ++i) {
    EXPECT_NE(waited.find("mpi-allreduce-worker-" + std::to_string(i) +
                          ".mpi-allreduce.default.svc accepts SSH"),
              std::string::npos)
        << waited;
  }
  const std::string log = Logs("mpi-allreduce-launcher-0");
  EXPECT_NE(log.find("allreduce over 4 ranks on ['mpi-allreduce-worker-0', "
                     "'mpi-allreduce-worker-1', 'mpi-allreduce-worker-2', "
                     "'mpi-allreduce-worker-3']: 10"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("allreduce ok"), std::string::npos) << log;
  // The key the members used is the job's own, made by the controller.
  auto secret = system_->client().Get(k8s::resources::Secrets(), "default", "mpi-allreduce-ssh");
  ASSERT_TRUE(secret.ok()) << secret.status().ToString();
  EXPECT_EQ((*secret)["type"], "kubernetes.io/ssh-auth");
}

// A server that takes PUTs into a directory; the first `fail` PUTs get a 500.
constexpr const char* kPutServer = R"(
import http.server, os, sys
root, fail = sys.argv[1], [int(sys.argv[2])]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_PUT(self):
        data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if fail[0] > 0:
            fail[0] -= 1
            self.send_response(500)
            self.end_headers()
            return
        path = os.path.normpath(self.path.lstrip("/"))
        if path.startswith(".."):
            self.send_response(403)
            self.end_headers()
            return
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "wb") as out:
            out.write(data)
        self.send_response(201)
        self.end_headers()
    def log_message(self, format, *args):
        print(format % args, flush=True)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("port", server.server_address[1], flush=True)
server.serve_forever()
)";

TEST_F(ExecEndToEndTest, ArtifactsAreUploadedAfterSuccessAndAFailedUploadIsRetried) {
  const std::string dir = system_->cluster().dir() + "/artifact-server";
  std::filesystem::create_directories(dir + "/store");
  std::ofstream(dir + "/server.py") << kPutServer;
  // curl retries a 500 three times itself: the fourth failure fails the
  // uploader's first run, and the kubelet runs it again.
  ChildProcess server({"/usr/bin/python3", "-u", dir + "/server.py", dir + "/store", "4"},
                      dir + "/server.log");
  const std::string port = ListeningPort(server);
  ASSERT_FALSE(port.empty()) << server.Log();
  std::string output;
  ASSERT_EQ(system_->Apply(R"(apiVersion: batch.hybridjob.io/v1alpha1
kind: HybridJob
metadata:
  name: trained
spec:
  volumes:
  - name: out
    size: 1Gi
    mountPath: /out
  artifacts:
    volume: out
    paths: [model, logs/metrics.txt]
    destination: http://127.0.0.1:)" +
                               port + R"(/runs/r1
  replicaSpecs:
  - name: worker
    minReplicas: 1
    template:
      spec:
        containers:
        - name: main
          image: busybox
          command: [/bin/sh, -c, 'mkdir -p /out/model/step-2 /out/logs && echo weights > /out/model/w.bin && echo late > /out/model/step-2/w.bin && echo loss=0.1 > /out/logs/metrics.txt && echo no > /out/scratch.txt']
)",
                           &output),
            0)
      << output;
  auto condition = [&]() -> json {
    const json job = system_->Job("trained");
    const json* status = job.is_object() && job.contains("status") ? &job["status"] : nullptr;
    if (status == nullptr || !status->is_object()) {
      return json::object();  // not written yet
    }
    for (const json& c : status->value("conditions", json::array())) {
      if (c.value("type", "") == "ArtifactsUploaded") {
        return c;
      }
    }
    return json::object();
  };
  std::vector<std::string> reasons;
  ASSERT_TRUE(WaitFor(
      [&] {
        const json c = condition();
        const std::string reason = c.value("reason", "");
        if (!reason.empty() && (reasons.empty() || reasons.back() != reason)) {
          reasons.push_back(reason);
        }
        // The job's success never waits for its upload.
        const std::string phase = system_->Phase("trained");
        EXPECT_TRUE(phase != "Failed") << phase;
        return c.value("status", "") == "True";
      },
      120s))
      << condition().dump() << "\n"
      << Logs("trained-artifacts") << "\n"
      << system_->Logs();
  EXPECT_EQ(system_->Phase("trained"), "Succeeded");
  EXPECT_EQ(condition()["reason"], "Uploaded");
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "Retrying"), reasons.end())
      << "the first run failed and was retried: " << ::testing::PrintToString(reasons);
  auto read = [&](const std::string& path) {
    std::ifstream in(dir + "/store/runs/r1/" + path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(read("model/w.bin"), "weights\n");
  EXPECT_EQ(read("model/step-2/w.bin"), "late\n");
  EXPECT_EQ(read("logs/metrics.txt"), "loss=0.1\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "/store/runs/r1/scratch.txt"));
  // The uploader ran where the volume's member ran.
  std::string uploader_node;
  system_->Kubectl("get pod trained-artifacts -o jsonpath={.spec.nodeName}", &uploader_node);
  EXPECT_FALSE(uploader_node.empty());
  EXPECT_NE(Logs("trained-artifacts").find("uploaded 3 files"), std::string::npos)
      << Logs("trained-artifacts");
}

TEST_F(ExecEndToEndTest, LogsFollowAContainerUntilItExits) {
  // A plain pod on a simulated node: the kubelet's part only.
  std::string output;
  ASSERT_EQ(system_->Apply(R"(apiVersion: v1
kind: Pod
metadata:
  name: ticker
spec:
  nodeName: sim-node-1
  restartPolicy: Never
  containers:
  - name: tick
    image: busybox
    command: ["sh", "-c", "sleep 1; for i in 1 2 3 4; do echo tick $i; sleep 0.5; done; echo bye"]
)",
                           &output),
            0)
      << output;
  ASSERT_TRUE(WaitFor(
      [&] {
        std::string phase;
        system_->Kubectl("get pod ticker -o jsonpath={.status.phase}", &phase);
        return phase == "Running";
      },
      30s));
  // -f returns only when the container has exited, with every line.
  const std::string followed = Logs("-f ticker");
  EXPECT_NE(followed.find("tick 1\ntick 2\ntick 3\ntick 4\nbye\n"), std::string::npos) << followed;
  std::string phase;
  ASSERT_TRUE(WaitFor(
      [&] {
        system_->Kubectl("get pod ticker -o jsonpath={.status.phase}", &phase);
        return phase == "Succeeded";
      },
      10s))
      << phase;
  EXPECT_EQ(Logs("ticker --tail 1"), "bye\n");
}

// The members' logs of a finished run stay readable after a re-run (the
// ended pods of the newest spec.runHistoryLimit runs stay, the new run's are
// named for it) and after the controller restarts; the plugin's
// `logs --run N` picks a run and `logs -f` follows the current one.
TEST_F(ExecEndToEndTest, AReRunKeepsThePreviousRunsLogsReadable) {
  std::string output;
  ASSERT_EQ(system_->Apply(R"yaml(apiVersion: batch.hybridjob.io/v1alpha1
kind: HybridJob
metadata:
  name: logs
spec:
  replicaSpecs:
    - name: worker
      minReplicas: 2
      template:
        spec:
          containers:
            - name: main
              image: busybox
              command: [sh, -c, 'echo "first run on $(hostname)"']
              resources:
                requests:
                  cpu: 100m
)yaml",
                           &output),
            0)
      << output;
  ASSERT_TRUE(WaitFor([&] { return system_->Phase("logs") == "Succeeded"; }, 60s))
      << "phase " << system_->Phase("logs") << "\n"
      << system_->Logs();

  // Run 1 runs for a few seconds, and looks up its peer as its framework
  // would: the name is the live run's member, not the ended one's.
  ASSERT_EQ(system_->Kubectl("patch hj logs --type json -p '[{\"op\":\"replace\",\"path\":"
                             "\"/spec/replicaSpecs/0/template/spec/containers/0/command/2\","
                             "\"value\":\"echo \\\"second run on $(hostname)\\\"; sleep 3; "
                             "getent hosts logs-worker-1.logs.default.svc; echo bye\"}]'",
                             &output),
            0)
      << output;
  ASSERT_EQ(system_->Kubectl(
                R"(patch hj logs --type merge -p '{"spec":{"runPolicy":{"rerun":1}}}')", &output),
            0)
      << output;
  std::string run_one_ip;
  ASSERT_TRUE(WaitFor(
      [&] {
        system_->Kubectl("get pod logs-worker-1-run1 -o jsonpath={.status.podIP}", &run_one_ip);
        return !run_one_ip.empty() && system_->Phase("logs") == "Running";
      },
      60s))
      << system_->Phase("logs") << "\n"
      << system_->Logs();

  const std::string plugin =
      BinaryDir() + "/kubectl-hybridjob --kubeconfig " + system_->cluster().kubeconfig();
  // While run 1 runs, run 0's logs are there, member by member.
  ASSERT_EQ(RunCommand(plugin + " logs logs --run 0", &output), 0) << output;
  EXPECT_NE(output.find("[pod/logs-worker-0] first run on logs-worker-0\n"), std::string::npos)
      << output;
  EXPECT_NE(output.find("[pod/logs-worker-1] first run on logs-worker-1\n"), std::string::npos)
      << output;
  // -f follows run 1 to its end: it returns when both members have exited.
  ASSERT_EQ(RunCommand(plugin + " logs logs -f --index 1", &output), 0) << output;
  EXPECT_NE(output.find("second run on logs-worker-1\n"), std::string::npos) << output;
  EXPECT_NE(output.find(run_one_ip + " "), std::string::npos)
      << "the hostname resolves to run 1's member: " << output;
  EXPECT_NE(output.find("bye\n"), std::string::npos) << output;
  ASSERT_TRUE(WaitFor(
      [&] {
        return system_->Phase("logs") == "Succeeded" && system_->Job("logs")["status"]["run"] == 1;
      },
      60s))
      << system_->Phase("logs") << "\n"
      << system_->Logs();

  // After a restart the controller keeps them: they are what it finds.
  system_->controller().Kill();
  ASSERT_TRUE(system_->RestartController()) << system_->Logs();
  // An edit it records shows that it has planned the job since.
  ASSERT_EQ(
      system_->Kubectl(
          R"(patch hj logs --type merge -p '{"spec":{"runPolicy":{"backoffLimit":5}}}')", &output),
      0)
      << output;
  ASSERT_TRUE(WaitFor(
      [&] {
        const json job = system_->Job("logs");
        return job["status"].value("observedGeneration", 0) ==
               job["metadata"].value("generation", -1);
      },
      30s))
      << system_->Logs();
  EXPECT_EQ(Logs("logs-worker-0"), "first run on logs-worker-0\n");
  EXPECT_NE(Logs("logs-worker-0-run1").find("second run on logs-worker-0\n"), std::string::npos);
  ASSERT_EQ(RunCommand(plugin + " logs logs --run 0 --index 0", &output), 0) << output;
  EXPECT_EQ(output, "first run on logs-worker-0\n");
  ASSERT_EQ(RunCommand(plugin + " status logs", &output), 0) << output;
  EXPECT_NE(output.find("Earlier runs:"), std::string::npos) << output;
  EXPECT_NE(output.find("logs-worker-0-run1"), std::string::npos) << output;
}

TEST_F(ExecEndToEndTest, CodeIsFetchedFromAnArchiveAndItsRunShRuns) {
  // A real HTTP server on the host serves the archive; members share the
  // host's network, so it is at 127.0.0.1.
  const std::string dir = system_->cluster().dir() + "/code-server";
  std::filesystem::create_directories(dir + "/src");
  std::ofstream(dir + "/src/run.sh")
      << "#!/bin/sh\nset -e\necho \"run.sh ran as $HYBRIDJOB_ROLE $HYBRIDJOB_INDEX in $(pwd)\"\n"
         "cat \"$HYBRIDJOB_CODE_DIR/data/message.txt\"\n";
  std::filesystem::create_directories(dir + "/src/data");
  std::ofstream(dir + "/src/data/message.txt") << "unpacked with its directories\n";
  ChildProcess tar({"/bin/tar", "-czf", dir + "/code.tar.gz", "-C", dir + "/src", "run.sh", "data"},
                   dir + "/tar.log");
  ASSERT_EQ(tar.WaitForExit(30s), 0) << tar.Log();
  ChildProcess server({"/usr/bin/python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1",
                       "--directory", dir},
                      dir + "/http.log");
  const std::string port = ListeningPort(server);
  ASSERT_FALSE(port.empty()) << server.Log();
  // The worked example, pointed at this server's port.
  std::ifstream example(SourceDir() + "/examples/exec/code-archive.yaml");
  std::string manifest((std::istreambuf_iterator<char>(example)), std::istreambuf_iterator<char>());
  const std::string example_url = "http://127.0.0.1:8000/";
  ASSERT_NE(manifest.find(example_url), std::string::npos);
  manifest.replace(manifest.find(example_url), example_url.size(),
                   "http://127.0.0.1:" + port + "/");
  std::string output;
  ASSERT_EQ(system_->Apply(manifest, &output), 0) << output;
  ASSERT_TRUE(WaitFor([&] { return system_->Phase("code-archive") == "Succeeded"; }, 90s))
      << "phase " << system_->Phase("code-archive") << "\n"
      << Logs("code-archive-worker-0 -c hybridjob-code") << "\n"
      << system_->Logs();
  for (int i = 0; i < 2; ++i) {
    const std::string member = "code-archive-worker-" + std::to_string(i);
    EXPECT_EQ(Logs(member + " -c main"), "run.sh ran as worker " + std::to_string(i) +
                                             " in /workspace\nunpacked with its directories\n");
  }
  EXPECT_NE(server.Log().find("GET /code.tar.gz HTTP/1.1\" 200"), std::string::npos)
      << server.Log();
}

// The acceptance test of elastic PyTorch: examples/exec/pytorch-elastic-torchrun.yaml
// (a master and 2-4 workers under torchrun, c10d rendezvous on the master's
// service name, a checkpoint on the job's volume) gives two workers back to a
// gang that waits, grows to four again when that gang is done, resumes from
// its checkpoint after both changes and succeeds.
TEST_F(ExecEndToEndTest, ElasticTorchrunJobShrinksAndGrowsAndResumesFromItsCheckpoint) {
  const std::string job = "pytorch-elastic";
  const std::string master = job + "-master-0";
  auto workers = [&] {
    const json object = system_->Job(job);
    if (object.contains("status") && object["status"].contains("replicaStatuses")) {
      for (const json& role : object["status"]["replicaStatuses"]) {
        if (role.value("name", "") == "worker") {
          return role.value("members", -1);
        }
      }
    }
    return -1;
  };
  // The master's log, fetched at most every half second.
  std::string log;
  auto last_fetch = std::chrono::steady_clock::time_point();
  auto master_log = [&] {
    if (std::chrono::steady_clock::now() - last_fetch > 500ms) {
      log = Logs(master + " -c pytorch");
      last_fetch = std::chrono::steady_clock::now();
    }
    return log;
  };
  // (world size, step) of each rendezvous round the master's trainer joined.
  auto rounds = [](const std::string& text) {
    std::vector<std::pair<int, int>> out;
    const std::regex round("world size ([0-9]+) at step ([0-9]+)");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), round);
         it != std::sregex_iterator(); ++it) {
      out.emplace_back(std::stoi((*it)[1]), std::stoi((*it)[2]));
    }
    return out;
  };
  // Whether rank 0 reported a loss for a later step than the round of `size`
  // started at: losses come every 50 steps and checkpoints every 10, so the
  // next round resumes past this one's start however slow the machine is.
  auto trained_at = [&](int size) {
    const std::string text = master_log();
    const std::regex round("world size " + std::to_string(size) + " at step ([0-9]+)");
    std::smatch started;
    if (!std::regex_search(text, started, round)) {
      return false;
    }
    const int start = std::stoi(started[1]);
    const std::string after = started.suffix();
    const std::regex loss("step ([0-9]+) loss");
    for (auto it = std::sregex_iterator(after.begin(), after.end(), loss);
         it != std::sregex_iterator(); ++it) {
      if (std::stoi((*it)[1]) > start) {
        return true;
      }
    }
    return false;
  };
  auto describe = [&] {
    return "phase " + system_->Phase(job) + ", workers " + std::to_string(workers()) +
           ", waiting job " + system_->Phase("waiting") + "\n" + Logs(master + " -c pytorch") +
           "\n" + system_->Logs();
  };

  std::string output;
  ASSERT_EQ(
      system_->Kubectl("apply -f " + SourceDir() + "/examples/exec/pytorch-elastic-torchrun.yaml",
                       &output),
      0)
      << output;
  // The master and all four workers share the node the checkpoint volume was
  // provisioned on; training runs with all five and has saved checkpoints.
  ASSERT_TRUE(WaitFor([&] { return workers() == 4 && trained_at(5); }, 90s)) << describe();

  // A gang of six one-GPU members: the other node's four GPUs and two of the
  // elastic job's, which gives back its two highest workers (min 2).
  const std::string gate = system_->cluster().dir() + "/waiting-gate";
  std::filesystem::create_directories(gate);
  ASSERT_EQ(system_->Apply(R"(apiVersion: batch.hybridjob.io/v1alpha1
kind: HybridJob
metadata:
  name: waiting
spec:
  framework: generic
  replicaSpecs:
  - name: worker
    minReplicas: 6
    template:
      spec:
        containers:
        - name: main
          image: busybox
          # Runs until the test opens the gate.
          command: [/bin/sh, -c, "until [ -e /gate/open ]; do sleep 0.2; done"]
          resources:
            limits:
              nvidia.com/gpu: 1
          volumeMounts:
          - name: gate
            mountPath: /gate
        volumes:
        - name: gate
          hostPath:
            path: )" + gate + "\n",
                           &output),
            0)
      << output;
  ASSERT_TRUE(
      WaitFor([&] { return system_->Phase("waiting") == "Running" && workers() == 2; }, 60s))
      << describe();
  // The survivors meet in a new round of three and train on from the checkpoint.
  ASSERT_TRUE(WaitFor([&] { return trained_at(3); }, 90s)) << describe();
  EXPECT_EQ(system_->Phase(job), "Running");

  // The waiting job ends; the elastic job grows back to four workers, trains
  // with all five again and succeeds.
  std::ofstream(gate + "/open") << "";
  ASSERT_TRUE(WaitFor([&] { return system_->Phase("waiting") == "Succeeded"; }, 30s)) << describe();
  ASSERT_TRUE(WaitFor([&] { return workers() == 4; }, 60s)) << describe();
  ASSERT_TRUE(WaitFor([&] { return system_->Phase(job) == "Succeeded"; }, 120s)) << describe();

  const std::string final_log = Logs(master + " -c pytorch");
  const auto seen = rounds(final_log);
  ASSERT_EQ(seen.size(), 3u) << final_log;
  EXPECT_EQ(seen[0], std::make_pair(5, 0)) << final_log;
  EXPECT_EQ(seen[1].first, 3) << final_log;
  EXPECT_EQ(seen[2].first, 5) << final_log;
  EXPECT_GT(seen[1].second, 0) << final_log;
  EXPECT_GT(seen[2].second, seen[1].second) << final_log;
  // Each later round started from the step of the checkpoint it resumed.
  std::vector<int> resumed;
  const std::regex resume("resumed from step ([0-9]+)");
  for (auto it = std::sregex_iterator(final_log.begin(), final_log.end(), resume);
       it != std::sregex_iterator(); ++it) {
    resumed.push_back(std::stoi((*it)[1]));
  }
  EXPECT_EQ(resumed, (std::vector<int>{seen[1].second, seen[2].second})) << final_log;
  std::smatch first;
  std::smatch last;
  ASSERT_TRUE(std::regex_search(final_log, first, std::regex("step 0 loss ([0-9.]+)")))
      << final_log;
  ASSERT_TRUE(std::regex_search(final_log, last, std::regex("final loss ([0-9.]+)"))) << final_log;
  EXPECT_LT(std::stod(last[1]), std::stod(first[1]) / 10) << final_log;
  EXPECT_EQ(system_->Job(job)["status"].value("restartCount", -1), 0);
}

}  // namespace
}  // namespace hybridjob::testing
