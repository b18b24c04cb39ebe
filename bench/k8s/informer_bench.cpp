// Informer throughput and memory against a real kube-apiserver.
//
//   bench_k8s_informer --kubeconfig FILE [--pods N] [--writers W]
//
// Creates N realistic pods in a fresh namespace, then measures:
//  - list sync: time for a new informer to list N pods into its cache;
//  - watch: N pod updates written by W writers, time until the informer's
//    cache has seen every one (events/s into the cache), next to the write rate;
//  - memory: resident bytes per cached pod.
// Prints one Markdown table; deletes its namespace at the end.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <hybridjob/k8s/informer.h>
#include <hybridjob/k8s/rest_client.h>

#include "../common/self_stats.h"

namespace {

using hybridjob::k8s::ApiClient;
using hybridjob::k8s::Informer;
using hybridjob::k8s::InformerOptions;
using hybridjob::k8s::resources::Namespaces;
using hybridjob::k8s::resources::Pods;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

json RealisticPod(const std::string& name, int index) {
  json env = json::array();
  for (int i = 0; i < 6; ++i) {
    env.push_back({{"name", "VAR_" + std::to_string(i)}, {"value", "value-" + std::to_string(i)}});
  }
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"labels",
         {{"batch.hybridjob.io/job-name", "job-" + std::to_string(index / 10)},
          {"batch.hybridjob.io/role", "worker"},
          {"batch.hybridjob.io/index", std::to_string(index % 10)}}},
        {"annotations",
         {{"batch.hybridjob.io/group-spec",
           R"({"roles":[{"name":"worker","min":4,"max":10,"priority":0}],"queue":"default"})"}}}}},
      {"spec",
       {{"schedulerName", "nobody"},
        {"nodeName", "bench-node-" + std::to_string(index % 100)},
        {"containers",
         json::array({{{"name", "trainer"},
                       {"image", "trainer:latest"},
                       {"command", json::array({"python", "train.py", "--epochs", "10"})},
                       {"env", env},
                       {"resources",
                        {{"requests", {{"cpu", "4"}, {"memory", "16Gi"}, {"nvidia.com/gpu", "1"}}},
                         {"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}}};
}

template <typename Fn>
double RunWriters(int writers, int count, Fn&& write) {
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&] {
      for (int i = next++; i < count; i = next++) {
        if (!write(i)) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  if (failures > 0) {
    std::cerr << failures << " writes failed\n";
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string kubeconfig;
  int pods = 5000;
  int writers = 16;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--kubeconfig" && i + 1 < argc) {
      kubeconfig = argv[++i];
    } else if (arg == "--pods" && i + 1 < argc) {
      pods = std::atoi(argv[++i]);
    } else if (arg == "--writers" && i + 1 < argc) {
      writers = std::atoi(argv[++i]);
    } else {
      std::cerr << "usage: bench_k8s_informer --kubeconfig FILE [--pods N] [--writers W]\n";
      return 2;
    }
  }
  auto config = hybridjob::k8s::ResolveClientConfig(kubeconfig);
  if (!config) {
    std::cerr << config.status().ToString() << "\n";
    return 1;
  }
  config->qps = 0;  // unlimited: measure the server and the informer
  config->max_in_flight = writers * 2;
  auto client_result = hybridjob::k8s::RestClient::Create(*config);
  if (!client_result) {
    std::cerr << client_result.status().ToString() << "\n";
    return 1;
  }
  auto& client = **client_result;
  const std::string ns = "bench-informer-" + std::to_string(::getpid());
  if (auto created = client.Create(
          Namespaces(), "",
          {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
      !created) {
    std::cerr << created.status().ToString() << "\n";
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // default ServiceAccount

  const double create_seconds = RunWriters(writers, pods, [&](int i) {
    return client.Create(Pods(), ns, RealisticPod("pod-" + std::to_string(i), i)).ok();
  });

  const int64_t rss_before = hybridjob::bench::ResidentBytes();
  InformerOptions<json> options;
  options.reflector.resource = Pods();
  options.reflector.namespace_name = ns;
  std::atomic<int> updates_seen{0};
  auto informer = std::make_unique<Informer<json>>(client, options);
  hybridjob::k8s::EventHandler<json> handler;
  handler.on_update = [&](const auto& old_pod, const auto& new_pod) {
    if ((*old_pod)["metadata"]["resourceVersion"] != (*new_pod)["metadata"]["resourceVersion"]) {
      ++updates_seen;
    }
  };
  informer->AddEventHandler(handler);
  const auto sync_start = Clock::now();
  informer->Start();
  if (!informer->WaitForSync(std::chrono::minutes(5))) {
    std::cerr << "informer did not sync\n";
    return 1;
  }
  const double sync_seconds = std::chrono::duration<double>(Clock::now() - sync_start).count();
  const int64_t rss_after = hybridjob::bench::ResidentBytes();

  const std::string before_patches = informer->LastResourceVersion();
  const auto watch_start = Clock::now();
  const double patch_seconds = RunWriters(writers, pods, [&](int i) {
    return client
        .Patch(Pods(), ns, "pod-" + std::to_string(i), hybridjob::k8s::PatchType::kMerge,
               R"({"metadata":{"annotations":{"bench/touched":"yes"}}})")
        .ok();
  });
  while (updates_seen.load() < pods && Clock::now() - watch_start < std::chrono::minutes(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double watch_seconds = std::chrono::duration<double>(Clock::now() - watch_start).count();
  informer->Stop();
  const size_t cached = informer->store().Size();
  informer.reset();

  // Replay: the same N events streamed in one burst from the server's watch
  // cache, through the watch decoder into a Store — the informer's path
  // without the write rate as the bottleneck.
  hybridjob::k8s::Store<json> replay_store;
  hybridjob::k8s::WatchOptions replay_options;
  replay_options.resource_version = before_patches;
  replay_options.timeout = std::chrono::seconds(120);
  int replayed = 0;
  const auto replay_start = Clock::now();
  auto replay = client.Watch(Pods(), ns, replay_options);
  if (replay) {
    while (replayed < pods) {
      auto event = (*replay)->Next();
      if (!event || !event->has_value() ||
          (*event)->type == hybridjob::k8s::WatchEventType::kError) {
        break;
      }
      auto& object = (*event)->object;
      replay_store.Upsert(
          hybridjob::k8s::ObjectKeyOf(object),
          std::make_shared<const json>(hybridjob::k8s::PruneForCache(std::move(object))));
      ++replayed;
    }
    (*replay)->Cancel();
  }
  const double replay_seconds = std::chrono::duration<double>(Clock::now() - replay_start).count();

  hybridjob::k8s::DeleteOptions background;
  background.propagation_policy = "Background";
  (void)client.Delete(Namespaces(), "", ns, background);

  std::printf("| measure | value |\n|---|---|\n");
  std::printf("| pods | %d (cached %zu) |\n", pods, cached);
  std::printf("| pod creates/s (%d writers) | %.0f |\n", writers, pods / create_seconds);
  std::printf("| list sync into cache, pods/s | %.0f (%.2f s) |\n", pods / sync_seconds,
              sync_seconds);
  std::printf("| pod patches/s written (%d writers) | %.0f |\n", writers, pods / patch_seconds);
  std::printf("| watch events/s into cache | %.0f (%d of %d seen in %.2f s) |\n",
              updates_seen.load() / watch_seconds, updates_seen.load(), pods, watch_seconds);
  std::printf(
      "| watch replay events/s into a store (burst from the watch cache) | %.0f (%d in "
      "%.2f s) |\n",
      replayed / replay_seconds, replayed, replay_seconds);
  std::printf("| memory per cached pod (JSON, managedFields pruned) | %.1f KiB |\n",
              static_cast<double>(rss_after - rss_before) / pods / 1024.0);
  std::printf("| peak RSS | %.1f MiB |\n",
              static_cast<double>(hybridjob::bench::PeakResidentBytes()) / (1024.0 * 1024.0));
  return updates_seen.load() >= pods ? 0 : 1;
}
