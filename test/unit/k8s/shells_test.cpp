// The Kubernetes client shells (reflector, informer, leader elector, event
// recorder) against the in-memory fake API server: the list/watch protocol,
// recovery from dropped watches, 410 Gone and refused requests, and the Lease
// and Event writes they make.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <k8s/fake_api_client.h>
#include <k8s/request_gate.h>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <hybridjob/common/backoff.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/event_recorder.h>
#include <hybridjob/k8s/informer.h>
#include <hybridjob/k8s/leader_election.h>
#include <hybridjob/k8s/object_meta.h>
#include <hybridjob/k8s/reflector.h>

namespace hybridjob::k8s {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::FakeApiClient;
using testing::OpenOnExit;
using testing::RequestGate;
using Request = FakeApiClient::Request;
using SteadyClock = std::chrono::steady_clock;

// The bound on every wait for a background thread: far beyond what any of
// them needs, so only a real failure reaches it.
constexpr auto kPatience = 5s;
constexpr char kNamespace[] = "team-a";

// Polls `condition` until it holds or kPatience passes; its final value.
template <typename Condition>
bool WaitUntil(Condition condition) {
  const auto deadline = SteadyClock::now() + kPatience;
  while (!condition()) {
    if (SteadyClock::now() >= deadline) {
      return condition();
    }
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

Status ApiError(StatusCode code, int http, const std::string& reason) {
  return Status(code, "injected " + reason).WithHttp(http, reason);
}
Status Throttled() {
  return ApiError(StatusCode::kTooManyRequests, 429, "TooManyRequests").WithRetryAfter(1s);
}
Status ServerError() {
  return ApiError(StatusCode::kUnavailable, 500, "InternalError");
}

json Pod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", kNamespace}}},
          {"spec", {{"containers", json::array({{{"name", "main"}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

// A fault refusing the requests `matches` selects while `refusing` is set.
FakeApiClient::Fault RefuseWhile(std::atomic<bool>& refusing,
                                 std::function<bool(const Request&)> matches, Status answer) {
  return [&refusing, matches = std::move(matches),
          answer = std::move(answer)](const Request& request) -> std::optional<Status> {
    if (refusing.load() && matches(request)) {
      return answer;
    }
    return std::nullopt;
  };
}

std::function<bool(const Request&)> Verb(std::string verb) {
  return [verb = std::move(verb)](const Request& request) { return request.verb == verb; };
}

// The resourceVersions (the fake's watch log keeps them as the subresource)
// of every watch the client opened or tried to.
std::vector<std::string> WatchVersions(const FakeApiClient& api) {
  std::vector<std::string> versions;
  for (const Request& request : api.Requests()) {
    if (request.verb == "watch") {
      versions.push_back(request.subresource);
    }
  }
  return versions;
}

// ---------------------------------------------------------------------------
// Reflector

// What a reflector handed its sink, for assertions from the test thread.
class RecordingSink final : public ReflectorSink {
 public:
  struct Snapshot {
    std::set<std::string> names;
    std::string resource_version;
  };
  struct Applied {
    WatchEventType type;
    std::string name;
    std::string resource_version;
  };

  void Replace(std::vector<json> items, const std::string& resource_version) override {
    Snapshot snapshot{{}, resource_version};
    for (const json& item : items) {
      snapshot.names.insert(NameOf(item));
    }
    std::lock_guard lock(mu_);
    snapshots_.push_back(std::move(snapshot));
  }
  void Apply(WatchEventType type, json object) override {
    std::lock_guard lock(mu_);
    applied_.push_back({type, NameOf(object), ResourceVersionOf(object)});
  }

  std::vector<Snapshot> snapshots() const {
    std::lock_guard lock(mu_);
    return snapshots_;
  }
  std::vector<Applied> applied() const {
    std::lock_guard lock(mu_);
    return applied_;
  }
  bool SawApplied(WatchEventType type, const std::string& name) const {
    std::lock_guard lock(mu_);
    return std::any_of(applied_.begin(), applied_.end(), [&](const Applied& applied) {
      return applied.type == type && applied.name == name;
    });
  }

 private:
  mutable std::mutex mu_;
  std::vector<Snapshot> snapshots_;
  std::vector<Applied> applied_;
};

ReflectorOptions PodReflectorOptions() {
  ReflectorOptions options;
  options.resource = resources::Pods();
  options.namespace_name = kNamespace;
  options.initial_backoff = 5ms;
  options.max_backoff = 20ms;
  return options;
}

// A reflector running on its own thread, stopped and joined on scope exit.
class RunningReflector {
 public:
  RunningReflector(ApiClient& client, ReflectorOptions options, ReflectorSink& sink)
      : reflector_(client, std::move(options), sink),
        returned_(run_returned_.get_future()),
        thread_([this] {
          reflector_.Run();
          run_returned_.set_value();
        }) {}
  ~RunningReflector() {
    reflector_.Stop();
    thread_.join();
  }

  // Stops the reflector; whether Run() returned within kPatience.
  bool StopAndWait() {
    reflector_.Stop();
    return returned_.wait_for(kPatience) == std::future_status::ready;
  }
  const Reflector& operator*() const { return reflector_; }
  const Reflector* operator->() const { return &reflector_; }

 private:
  Reflector reflector_;
  std::promise<void> run_returned_;
  std::future<void> returned_;
  std::thread thread_;
};

TEST(ReflectorTest, ListsThenWatchesFromTheListsVersion) {
  FakeApiClient api;
  api.Seed(resources::Pods(), Pod("a"));
  api.Seed(resources::Pods(), Pod("b"));
  RecordingSink sink;
  RunningReflector reflector(api, PodReflectorOptions(), sink);
  ASSERT_TRUE(WaitUntil([&] { return !sink.snapshots().empty(); }));
  const RecordingSink::Snapshot listed = sink.snapshots().front();
  EXPECT_EQ(listed.names, (std::set<std::string>{"a", "b"}));

  ASSERT_TRUE(api.Create(resources::Pods(), kNamespace, Pod("c")).ok());
  json a = *api.Object(resources::Pods(), kNamespace, "a");
  a["metadata"]["labels"]["touched"] = "yes";
  ASSERT_TRUE(api.Update(resources::Pods(), a).ok());
  ASSERT_TRUE(api.Delete(resources::Pods(), kNamespace, "b").ok());
  ASSERT_TRUE(WaitUntil([&] { return sink.applied().size() == 3; }));

  const auto applied = sink.applied();
  EXPECT_EQ(applied[0].type, WatchEventType::kAdded);
  EXPECT_EQ(applied[0].name, "c");
  EXPECT_EQ(applied[1].type, WatchEventType::kModified);
  EXPECT_EQ(applied[1].name, "a");
  EXPECT_EQ(applied[2].type, WatchEventType::kDeleted);
  EXPECT_EQ(applied[2].name, "b");
  EXPECT_EQ(reflector->LastResourceVersion(), applied[2].resource_version);
  // One list, and the watch resumed exactly where the list left off.
  EXPECT_EQ(reflector->stats().lists.load(), 1u);
  EXPECT_EQ(WatchVersions(api), std::vector<std::string>{listed.resource_version});
  EXPECT_EQ(sink.snapshots().size(), 1u);
}

TEST(ReflectorTest, ListsEveryPage) {
  FakeApiClient api;
  std::set<std::string> seeded;
  for (const char* name : {"a", "b", "c", "d", "e"}) {
    api.Seed(resources::Pods(), Pod(name));
    seeded.insert(name);
  }
  RecordingSink sink;
  ReflectorOptions options = PodReflectorOptions();
  options.page_size = 2;
  RunningReflector reflector(api, options, sink);
  ASSERT_TRUE(WaitUntil([&] { return !sink.snapshots().empty(); }));
  EXPECT_EQ(sink.snapshots().front().names, seeded);
  EXPECT_EQ(api.CountRequests("list"), 3u);
  EXPECT_EQ(reflector->stats().lists.load(), 1u);
}

TEST(ReflectorTest, ResumesADroppedWatchFromTheLastVersionWithoutRelisting) {
  FakeApiClient api;
  api.Seed(resources::Pods(), Pod("a"));
  RecordingSink sink;
  std::atomic<bool> refuse_watches{false};
  api.SetFault(RefuseWhile(refuse_watches, Verb("watch"), ServerError()));
  RunningReflector reflector(api, PodReflectorOptions(), sink);
  ASSERT_TRUE(WaitUntil([&] { return api.CountRequests("watch") == 1; }));
  ASSERT_TRUE(api.Create(resources::Pods(), kNamespace, Pod("b")).ok());
  ASSERT_TRUE(WaitUntil([&] { return sink.SawApplied(WatchEventType::kAdded, "b"); }));
  const std::string seen_version = reflector->LastResourceVersion();

  // The stream ends and rewatching fails for a while; a change made meanwhile
  // must come from the watch's replay, not from a new list.
  refuse_watches = true;
  api.CloseWatches();
  ASSERT_TRUE(api.Create(resources::Pods(), kNamespace, Pod("c")).ok());
  ASSERT_TRUE(WaitUntil([&] { return api.CountRequests("watch") >= 3; }));
  refuse_watches = false;
  ASSERT_TRUE(WaitUntil([&] { return sink.SawApplied(WatchEventType::kAdded, "c"); }));

  EXPECT_EQ(api.CountRequests("list"), 1u);
  EXPECT_EQ(sink.snapshots().size(), 1u);
  EXPECT_EQ(reflector->stats().relists_after_gone.load(), 0u);
  EXPECT_GE(reflector->stats().errors.load(), 2u);
  const auto versions = WatchVersions(api);
  ASSERT_GE(versions.size(), 3u);
  for (size_t i = 1; i < versions.size(); ++i) {
    EXPECT_EQ(versions[i], seen_version) << "watch " << i;
  }
}

TEST(ReflectorTest, RelistsWhenItsVersionWasCompactedAway) {
  FakeApiClient api;
  api.Seed(resources::Pods(), Pod("a"));
  api.Seed(resources::Pods(), Pod("b"));
  RecordingSink sink;
  std::atomic<bool> refuse_watches{false};
  api.SetFault(RefuseWhile(refuse_watches, Verb("watch"), ServerError()));
  RunningReflector reflector(api, PodReflectorOptions(), sink);
  ASSERT_TRUE(WaitUntil([&] { return api.CountRequests("watch") == 1; }));

  // Changes made while no watch is open, then forgotten by the server: only
  // a new list can tell the reflector about them.
  refuse_watches = true;
  api.CloseWatches();
  ASSERT_TRUE(api.Delete(resources::Pods(), kNamespace, "a").ok());
  ASSERT_TRUE(api.Create(resources::Pods(), kNamespace, Pod("c")).ok());
  api.Compact();
  refuse_watches = false;

  ASSERT_TRUE(WaitUntil([&] { return sink.snapshots().size() == 2; }));
  const auto relisted = sink.snapshots().back();
  EXPECT_EQ(relisted.names, (std::set<std::string>{"b", "c"}));
  auto server = api.List(resources::Pods(), kNamespace, {});
  ASSERT_TRUE(server.ok());
  EXPECT_EQ(relisted.resource_version, server->resource_version);
  EXPECT_EQ(reflector->stats().relists_after_gone.load(), 1u);
  EXPECT_TRUE(sink.applied().empty());

  // And it watches on from the new list.
  ASSERT_TRUE(api.Create(resources::Pods(), kNamespace, Pod("d")).ok());
  ASSERT_TRUE(WaitUntil([&] { return sink.SawApplied(WatchEventType::kAdded, "d"); }));
  EXPECT_EQ(WatchVersions(api).back(), relisted.resource_version);
}

TEST(ReflectorTest, RelistsWhenAWatchIsRefusedAsGone) {
  FakeApiClient api;
  api.Seed(resources::Pods(), Pod("a"));
  RecordingSink sink;
  std::atomic<bool> watch_gone{false};
  api.SetFault([&](const Request& request) -> std::optional<Status> {
    if (request.verb == "watch" && watch_gone.exchange(false)) {
      return ApiError(StatusCode::kGone, 410, "Expired");
    }
    return std::nullopt;
  });
  RunningReflector reflector(api, PodReflectorOptions(), sink);
  ASSERT_TRUE(WaitUntil([&] { return api.CountRequests("watch") == 1; }));
  watch_gone = true;
  api.CloseWatches();
  ASSERT_TRUE(WaitUntil([&] { return sink.snapshots().size() == 2; }));
  EXPECT_EQ(reflector->stats().relists_after_gone.load(), 1u);
  EXPECT_EQ(api.CountRequests("list"), 2u);
}

TEST(ReflectorTest, BacksOffBetweenFailedListsAndRecovers) {
  FakeApiClient api;
  api.Seed(resources::Pods(), Pod("a"));
  RecordingSink sink;
  std::mutex mu;
  std::vector<SteadyClock::time_point> list_attempts;
  constexpr size_t kRefusedLists = 3;
  api.SetFault([&](const Request& request) -> std::optional<Status> {
    if (request.verb != "list") {
      return std::nullopt;
    }
    std::lock_guard lock(mu);
    list_attempts.push_back(SteadyClock::now());
    if (list_attempts.size() <= kRefusedLists) {
      return list_attempts.size() % 2 == 1 ? ServerError() : Throttled();
    }
    return std::nullopt;
  });
  ReflectorOptions options = PodReflectorOptions();
  options.initial_backoff = 20ms;
  options.max_backoff = 80ms;
  RunningReflector reflector(api, options, sink);
  ASSERT_TRUE(WaitUntil([&] { return sink.snapshots().size() == 1; }));
  EXPECT_EQ(sink.snapshots().front().names, std::set<std::string>{"a"});
  EXPECT_EQ(reflector->stats().errors.load(), kRefusedLists);

  // Each retry waited at least half its doubled back-off (the rest is jitter).
  std::lock_guard lock(mu);
  ASSERT_EQ(list_attempts.size(), kRefusedLists + 1);
  for (size_t retry = 0; retry < kRefusedLists; ++retry) {
    const Duration backoff = ExponentialBackoff<Duration>(
        options.initial_backoff, options.max_backoff, static_cast<int>(retry));
    EXPECT_GE(list_attempts[retry + 1] - list_attempts[retry], backoff / 2) << "retry " << retry;
  }
}

TEST(ReflectorTest, RewatchesAfterThrottledWatchesWithoutRelisting) {
  FakeApiClient api;
  RecordingSink sink;
  std::atomic<int> watches_to_throttle{0};
  api.SetFault([&](const Request& request) -> std::optional<Status> {
    if (request.verb == "watch" && watches_to_throttle.fetch_sub(1) > 0) {
      return Throttled();
    }
    return std::nullopt;
  });
  RunningReflector reflector(api, PodReflectorOptions(), sink);
  ASSERT_TRUE(WaitUntil([&] { return api.CountRequests("watch") == 1; }));
  watches_to_throttle = 2;
  api.CloseWatches();
  ASSERT_TRUE(WaitUntil([&] { return api.CountRequests("watch") == 4; }));
  ASSERT_TRUE(api.Create(resources::Pods(), kNamespace, Pod("a")).ok());
  ASSERT_TRUE(WaitUntil([&] { return sink.SawApplied(WatchEventType::kAdded, "a"); }));
  EXPECT_EQ(api.CountRequests("list"), 1u);
  EXPECT_EQ(reflector->stats().errors.load(), 2u);
}

TEST(ReflectorTest, AnAbsentCollectionIsOneEmptySnapshotUntilItAppears) {
  FakeApiClient api;
  api.Seed(resources::Pods(), Pod("a"));
  RecordingSink sink;
  std::atomic<bool> absent{true};
  api.SetFault(RefuseWhile(absent, Verb("list"), ApiError(StatusCode::kNotFound, 404, "NotFound")));
  ReflectorOptions options = PodReflectorOptions();
  options.absent_collection_is_empty = true;
  RunningReflector reflector(api, options, sink);
  ASSERT_TRUE(WaitUntil([&] { return api.CountRequests("list") >= 3; }));
  ASSERT_EQ(sink.snapshots().size(), 1u);
  EXPECT_TRUE(sink.snapshots().front().names.empty());
  EXPECT_EQ(api.CountRequests("watch"), 0u);

  absent = false;
  ASSERT_TRUE(WaitUntil([&] { return sink.snapshots().size() == 2; }));
  EXPECT_EQ(sink.snapshots().back().names, std::set<std::string>{"a"});
}

TEST(ReflectorTest, StopInterruptsABackoff) {
  FakeApiClient api;
  RecordingSink sink;
  api.SetFault([](const Request& request) -> std::optional<Status> {
    return request.verb == "list" ? std::optional<Status>(ServerError()) : std::nullopt;
  });
  ReflectorOptions options = PodReflectorOptions();
  options.initial_backoff = 30s;  // far longer than the wait below
  options.max_backoff = 30s;
  RunningReflector reflector(api, options, sink);
  ASSERT_TRUE(WaitUntil([&] { return reflector->stats().errors.load() == 1; }));
  EXPECT_TRUE(reflector.StopAndWait());
  EXPECT_EQ(api.CountRequests("list"), 1u);
}

TEST(ReflectorTest, StopInterruptsAnOpenWatch) {
  FakeApiClient api;
  RecordingSink sink;
  RunningReflector reflector(api, PodReflectorOptions(), sink);
  ASSERT_TRUE(WaitUntil([&] { return api.CountRequests("watch") == 1; }));
  if (!reflector.StopAndWait()) {
    ADD_FAILURE() << "Run() still blocked in the watch after Stop()";
    api.CloseWatches();  // so the thread can be joined
  }
  EXPECT_EQ(api.CountRequests("watch"), 1u);
}

// ---------------------------------------------------------------------------
// Informer

struct Notification {
  std::string kind;  // add, update, delete
  std::string name;
  std::string old_version;  // updates only
  std::string version;
  bool final_state_unknown = false;  // deletes only
  bool same_object = false;          // updates: old and new are one cached object
};

// What an informer's handlers were told, in order.
class HandlerLog {
 public:
  EventHandler<json> Handler() {
    EventHandler<json> handler;
    handler.on_add = [this](const EventHandler<json>::Ptr& object) {
      Add({"add", NameOf(*object), "", ResourceVersionOf(*object)});
    };
    handler.on_update = [this](const EventHandler<json>::Ptr& old_object,
                               const EventHandler<json>::Ptr& new_object) {
      Add({"update", NameOf(*new_object), ResourceVersionOf(*old_object),
           ResourceVersionOf(*new_object), false, old_object == new_object});
    };
    handler.on_delete = [this](const EventHandler<json>::Ptr& last, bool final_state_unknown) {
      Add({"delete", NameOf(*last), "", ResourceVersionOf(*last), final_state_unknown});
    };
    return handler;
  }

  std::vector<Notification> Seen() const {
    std::lock_guard lock(mu_);
    return seen_;
  }
  std::optional<Notification> Last(const std::string& kind, const std::string& name) const {
    std::lock_guard lock(mu_);
    for (auto it = seen_.rbegin(); it != seen_.rend(); ++it) {
      if (it->kind == kind && it->name == name) {
        return *it;
      }
    }
    return std::nullopt;
  }

 private:
  void Add(Notification notification) {
    std::lock_guard lock(mu_);
    seen_.push_back(std::move(notification));
  }

  mutable std::mutex mu_;
  std::vector<Notification> seen_;
};

InformerOptions<json> PodInformerOptions() {
  InformerOptions<json> options;
  options.reflector = PodReflectorOptions();
  return options;
}

// Key -> resourceVersion of what the informer caches and of what the server
// holds.
std::map<std::string, std::string> CachedVersions(const Informer<json>& informer) {
  std::map<std::string, std::string> versions;
  for (const auto& object : informer.store().List()) {
    versions[ObjectKeyOf(*object)] = ResourceVersionOf(*object);
  }
  return versions;
}
std::map<std::string, std::string> ServerVersions(FakeApiClient& api) {
  std::map<std::string, std::string> versions;
  auto list = api.List(resources::Pods(), kNamespace, {});
  EXPECT_TRUE(list.ok()) << list.status().ToString();
  if (list.ok()) {
    for (const json& object : list->items) {
      versions[ObjectKeyOf(object)] = ResourceVersionOf(object);
    }
  }
  return versions;
}

TEST(InformerTest, HandlersSeeAddsUpdatesAndDeletes) {
  FakeApiClient api;
  api.Seed(resources::Pods(), Pod("a"));
  HandlerLog log;
  Informer<json> informer(api, PodInformerOptions());
  informer.AddEventHandler(log.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(kPatience));
  ASSERT_TRUE(log.Last("add", "a").has_value());
  ASSERT_NE(informer.store().Get("team-a/a"), nullptr);

  ASSERT_TRUE(api.Create(resources::Pods(), kNamespace, Pod("b")).ok());
  json a = *api.Object(resources::Pods(), kNamespace, "a");
  const std::string a_before = ResourceVersionOf(a);
  a["metadata"]["labels"]["touched"] = "yes";
  auto updated = api.Update(resources::Pods(), a);
  ASSERT_TRUE(updated.ok());
  ASSERT_TRUE(api.Delete(resources::Pods(), kNamespace, "a").ok());
  ASSERT_TRUE(WaitUntil([&] { return log.Last("delete", "a").has_value(); }));

  const auto added = log.Last("add", "b");
  ASSERT_TRUE(added.has_value());
  const auto update = log.Last("update", "a");
  ASSERT_TRUE(update.has_value());
  EXPECT_EQ(update->old_version, a_before);
  EXPECT_EQ(update->version, ResourceVersionOf(*updated));
  EXPECT_FALSE(log.Last("delete", "a")->final_state_unknown);
  EXPECT_EQ(log.Seen().size(), 4u);  // add a, add b, update a, delete a
  EXPECT_EQ(informer.store().Get("team-a/a"), nullptr);
  EXPECT_EQ(CachedVersions(informer), ServerVersions(api));
  informer.Stop();
}

TEST(InformerTest, ARelistDeletesWhatVanishedAndMatchesTheServer) {
  FakeApiClient api;
  api.Seed(resources::Pods(), Pod("kept"));
  api.Seed(resources::Pods(), Pod("changed"));
  api.Seed(resources::Pods(), Pod("deleted"));
  std::atomic<bool> refuse_watches{false};
  api.SetFault(RefuseWhile(refuse_watches, Verb("watch"), ServerError()));
  HandlerLog log;
  Informer<json> informer(api, PodInformerOptions());
  informer.AddEventHandler(log.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(kPatience));
  ASSERT_TRUE(WaitUntil([&] { return api.CountRequests("watch") == 1; }));

  // Missed while the watch is down, and compacted away: 410 on rewatch.
  refuse_watches = true;
  api.CloseWatches();
  ASSERT_TRUE(api.Delete(resources::Pods(), kNamespace, "deleted").ok());
  json changed = *api.Object(resources::Pods(), kNamespace, "changed");
  changed["metadata"]["labels"]["touched"] = "yes";
  auto updated = api.Update(resources::Pods(), changed);
  ASSERT_TRUE(updated.ok());
  ASSERT_TRUE(api.Create(resources::Pods(), kNamespace, Pod("created")).ok());
  api.Compact();
  refuse_watches = false;

  ASSERT_TRUE(WaitUntil([&] { return informer.stats().relists_after_gone.load() == 1; }));
  ASSERT_TRUE(WaitUntil([&] { return log.Last("delete", "deleted").has_value(); }));
  EXPECT_TRUE(log.Last("delete", "deleted")->final_state_unknown);
  EXPECT_TRUE(log.Last("add", "created").has_value());
  const auto update = log.Last("update", "changed");
  ASSERT_TRUE(update.has_value());
  EXPECT_EQ(update->version, ResourceVersionOf(*updated));
  EXPECT_EQ(CachedVersions(informer), ServerVersions(api));
  informer.Stop();
}

TEST(InformerTest, ResyncRedeliversCachedObjectsAsUpdates) {
  FakeApiClient api;
  api.Seed(resources::Pods(), Pod("a"));
  HandlerLog log;
  InformerOptions<json> options = PodInformerOptions();
  options.resync_period = 10ms;
  Informer<json> informer(api, options);
  informer.AddEventHandler(log.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(kPatience));
  ASSERT_TRUE(WaitUntil([&] { return log.Last("update", "a").has_value(); }));
  EXPECT_TRUE(log.Last("update", "a")->same_object);
  EXPECT_EQ(api.CountRequests("list"), 1u);  // from the cache, not the server
  informer.Stop();
}

// ---------------------------------------------------------------------------
// LeaderElector

constexpr char kLeaseNamespace[] = "hybridjob-system";
constexpr char kLeaseName[] = "hybridjob-scheduler";

// What an elector's callbacks reported.
struct ElectionLog {
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::mutex mu;
  std::vector<std::string> leaders;

  std::vector<std::string> Leaders() {
    std::lock_guard lock(mu);
    return leaders;
  }
};

// A one-second Lease (the shortest a Lease records), renewed every 20 ms.
LeaderElectionConfig ElectionConfig(const std::string& identity, ElectionLog& log) {
  LeaderElectionConfig config;
  config.lease_namespace = kLeaseNamespace;
  config.lease_name = kLeaseName;
  config.identity = identity;
  config.lease_duration = 1000ms;
  config.renew_deadline = 200ms;
  config.retry_period = 20ms;
  config.on_started_leading = [&log] { ++log.started; };
  config.on_stopped_leading = [&log] { ++log.stopped; };
  config.on_new_leader = [&log](const std::string& leader) {
    std::lock_guard lock(log.mu);
    log.leaders.push_back(leader);
  };
  EXPECT_TRUE(ValidateLeaderElectionConfig(config).ok());
  return config;
}

json LeaseSpec(const FakeApiClient& api) {
  auto lease = api.Object(resources::Leases(), kLeaseNamespace, kLeaseName);
  return lease.has_value() ? lease->value("spec", json::object()) : json();
}

bool IsLeaseUpdate(const Request& request) {
  return request.verb == "update" && request.resource == "leases";
}

TEST(LeaderElectorTest, AcquiresAFreeLeaseRenewsItAndReleasesItOnStop) {
  FakeApiClient api;
  ElectionLog log;
  LeaderElector elector(api, ElectionConfig("a", log));
  elector.Start();
  // IsLeader turns before the callback runs: wait for that too.
  ASSERT_TRUE(WaitUntil([&] { return elector.IsLeader() && log.started.load() == 1; }));
  const json acquired = LeaseSpec(api);
  EXPECT_EQ(acquired.value("holderIdentity", ""), "a");
  EXPECT_EQ(acquired.value("leaseDurationSeconds", 0), 1);
  EXPECT_EQ(acquired.value("leaseTransitions", -1), 0);
  EXPECT_EQ(log.Leaders(), std::vector<std::string>{"a"});

  // Renewals move renewTime and nothing that marks a new holder.
  ASSERT_TRUE(WaitUntil(
      [&] { return LeaseSpec(api).value("renewTime", "") != acquired.value("renewTime", ""); }));
  const json renewed = LeaseSpec(api);
  EXPECT_EQ(renewed.value("holderIdentity", ""), "a");
  EXPECT_EQ(renewed.value("acquireTime", ""), acquired.value("acquireTime", ""));
  EXPECT_EQ(renewed.value("leaseTransitions", -1), 0);
  EXPECT_TRUE(elector.IsLeader());

  elector.Stop();
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_EQ(log.stopped.load(), 1);
  EXPECT_EQ(LeaseSpec(api).value("holderIdentity", "?"), "");
}

TEST(LeaderElectorTest, WaitsForALeaseHeldByAnotherIdentityToExpire) {
  FakeApiClient api;
  json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", kLeaseName}, {"namespace", kLeaseNamespace}}},
                {"spec",
                 {{"holderIdentity", "other"},
                  {"leaseDurationSeconds", 3600},
                  {"acquireTime", "2030-01-01T00:00:00.000000Z"},
                  {"renewTime", "2030-01-01T00:00:00.000000Z"},
                  {"leaseTransitions", 4}}}};
  lease = api.Seed(resources::Leases(), lease);
  ElectionLog log;
  LeaderElector elector(api, ElectionConfig("b", log));
  elector.Start();
  // Several reads of a Lease that is far from expiry: no attempt to take it.
  ASSERT_TRUE(WaitUntil([&] { return api.CountRequests("get") >= 5; }));
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_EQ(elector.ObservedLeader(), "other");
  EXPECT_EQ(log.Leaders(), std::vector<std::string>{"other"});
  EXPECT_EQ(api.CountRequests("update"), 0u);
  EXPECT_EQ(api.CountRequests("create"), 0u);

  // The holder's last renewal, of a one-second Lease; then it goes quiet.
  // Expiry is measured from when the candidate saw that renewal.
  const auto last_renewal = SteadyClock::now();
  lease["spec"]["renewTime"] = "2030-01-01T00:00:01.000000Z";
  lease["spec"]["leaseDurationSeconds"] = 1;
  api.Seed(resources::Leases(), lease);
  ASSERT_TRUE(WaitUntil([&] { return elector.IsLeader(); }));
  EXPECT_GE(SteadyClock::now() - last_renewal, 1s);
  const json taken = LeaseSpec(api);
  EXPECT_EQ(taken.value("holderIdentity", ""), "b");
  EXPECT_EQ(taken.value("leaseTransitions", -1), 5);
  EXPECT_NE(taken.value("acquireTime", ""), "2030-01-01T00:00:00.000000Z");
  EXPECT_EQ(log.Leaders(), (std::vector<std::string>{"other", "b"}));
  elector.Stop();
}

// The leader's renewals fail (`answer` to the requests `refused` selects):
// it stops leading after the renew deadline, and leads again, without a
// transition, once the server accepts its writes.
void ExpectStepsDownWhileRenewalsFail(std::function<bool(const Request&)> refused, Status answer) {
  FakeApiClient api;
  std::atomic<bool> refusing{false};
  api.SetFault(RefuseWhile(refusing, std::move(refused), std::move(answer)));
  ElectionLog log;
  LeaderElector elector(api, ElectionConfig("a", log));
  elector.Start();
  ASSERT_TRUE(WaitUntil([&] { return elector.IsLeader(); }));

  // IsLeader turns before the callbacks run: wait for those too.
  refusing = true;
  ASSERT_TRUE(WaitUntil([&] { return !elector.IsLeader() && log.stopped.load() == 1; }));
  EXPECT_EQ(LeaseSpec(api).value("holderIdentity", ""), "a");  // nothing else wrote it

  refusing = false;
  ASSERT_TRUE(WaitUntil([&] { return elector.IsLeader() && log.started.load() == 2; }));
  EXPECT_EQ(log.stopped.load(), 1);
  EXPECT_EQ(LeaseSpec(api).value("leaseTransitions", -1), 0);
  elector.Stop();
}

TEST(LeaderElectorTest, StepsDownWhenRenewalsConflict) {
  ExpectStepsDownWhileRenewalsFail(IsLeaseUpdate, ApiError(StatusCode::kConflict, 409, "Conflict"));
}

TEST(LeaderElectorTest, StepsDownWhenTheLeaseCannotBeRead) {
  ExpectStepsDownWhileRenewalsFail(Verb("get"), ServerError());
}

TEST(LeaderElectorTest, AStandbyTakesOverOnceTheLeaderStopsRenewing) {
  FakeApiClient api;
  std::atomic<bool> refuse_a{false};
  api.SetFault(RefuseWhile(
      refuse_a,
      [](const Request& request) {
        return IsLeaseUpdate(request) &&
               request.body.value("spec", json::object()).value("holderIdentity", "") == "a";
      },
      ServerError()));
  ElectionLog log_a;
  ElectionLog log_b;
  LeaderElectionConfig config_a = ElectionConfig("a", log_a);
  config_a.release_on_stop = false;  // as a leader that crashes
  LeaderElector a(api, config_a);
  LeaderElector b(api, ElectionConfig("b", log_b));
  a.Start();
  ASSERT_TRUE(WaitUntil([&] { return a.IsLeader(); }));
  b.Start();
  ASSERT_TRUE(WaitUntil([&] { return b.ObservedLeader() == "a"; }));
  EXPECT_FALSE(b.IsLeader());

  refuse_a = true;
  ASSERT_TRUE(WaitUntil([&] { return b.IsLeader(); }));
  EXPECT_FALSE(a.IsLeader());
  EXPECT_EQ(log_a.stopped.load(), 1);
  const json taken = LeaseSpec(api);
  EXPECT_EQ(taken.value("holderIdentity", ""), "b");
  EXPECT_EQ(taken.value("leaseTransitions", -1), 1);
  EXPECT_EQ(log_b.Leaders(), (std::vector<std::string>{"a", "b"}));
  // The deposed leader hears of its successor.
  ASSERT_TRUE(WaitUntil([&] {
    const auto leaders = log_a.Leaders();
    return !leaders.empty() && leaders.back() == "b";
  }));
  a.Stop();
  b.Stop();
  EXPECT_EQ(LeaseSpec(api).value("holderIdentity", "?"), "");  // b released it
}

TEST(LeaderElectorTest, AReleasedLeaseIsTakenWithoutWaitingForExpiry) {
  FakeApiClient api;
  ElectionLog log_a;
  ElectionLog log_b;
  // A Lease far longer than the wait below: only the release lets b in.
  auto long_lease = [](LeaderElectionConfig config) {
    config.lease_duration = 60s;
    return config;
  };
  LeaderElector a(api, long_lease(ElectionConfig("a", log_a)));
  LeaderElector b(api, long_lease(ElectionConfig("b", log_b)));
  a.Start();
  ASSERT_TRUE(WaitUntil([&] { return a.IsLeader(); }));
  b.Start();
  ASSERT_TRUE(WaitUntil([&] { return b.ObservedLeader() == "a"; }));
  a.Stop();
  EXPECT_FALSE(a.IsLeader());
  ASSERT_TRUE(WaitUntil([&] { return b.IsLeader(); }));
  const json taken = LeaseSpec(api);
  EXPECT_EQ(taken.value("holderIdentity", ""), "b");
  EXPECT_EQ(taken.value("leaseDurationSeconds", 0), 60);
  EXPECT_EQ(taken.value("leaseTransitions", -1), 1);
  b.Stop();
}

// ---------------------------------------------------------------------------
// EventRecorder

std::vector<json> EventsIn(FakeApiClient& api, const std::string& ns) {
  auto list = api.List(resources::Events(), ns, {});
  EXPECT_TRUE(list.ok()) << list.status().ToString();
  return list.ok() ? list->items : std::vector<json>{};
}

// Events of one reason and message, oldest first (names end in a timestamp).
std::vector<json> EventsAbout(FakeApiClient& api, const std::string& message) {
  std::vector<json> matching;
  for (json& event : EventsIn(api, kNamespace)) {
    if (event.value("message", "") == message) {
      matching.push_back(std::move(event));
    }
  }
  std::sort(matching.begin(), matching.end(),
            [](const json& x, const json& y) { return NameOf(x) < NameOf(y); });
  return matching;
}

bool IsEventCreate(const Request& request) {
  return request.verb == "create" && request.resource == "events";
}

size_t CountEventCreates(const FakeApiClient& api) {
  const auto requests = api.Requests();
  return static_cast<size_t>(std::count_if(requests.begin(), requests.end(), IsEventCreate));
}

TEST(EventRecorderTest, CreatesAnEventAboutTheObject) {
  FakeApiClient api;
  const json pod = api.Seed(resources::Pods(), Pod("worker-0"));
  EventRecorder recorder(api, "gang-scheduler");
  EXPECT_TRUE(recorder.Flush(kPatience));  // idle from the start
  recorder.Record(ReferenceTo(pod), EventType::kWarning, "FailedScheduling", "0/3 nodes fit");
  ASSERT_TRUE(recorder.Flush(kPatience));

  const auto events = EventsIn(api, kNamespace);
  ASSERT_EQ(events.size(), 1u);
  const json& event = events.front();
  EXPECT_EQ(event["involvedObject"].value("kind", ""), "Pod");
  EXPECT_EQ(event["involvedObject"].value("name", ""), "worker-0");
  EXPECT_EQ(event["involvedObject"].value("uid", ""), UidOf(pod));
  EXPECT_EQ(event["involvedObject"].value("namespace", ""), kNamespace);
  EXPECT_EQ(event.value("reason", ""), "FailedScheduling");
  EXPECT_EQ(event.value("message", ""), "0/3 nodes fit");
  EXPECT_EQ(event.value("type", ""), "Warning");
  EXPECT_EQ(event["source"].value("component", ""), "gang-scheduler");
  EXPECT_EQ(event.value("count", 0), 1);
  recorder.Stop();
}

TEST(EventRecorderTest, RepeatsRaiseTheCountOfOneEvent) {
  FakeApiClient api;
  const json pod = api.Seed(resources::Pods(), Pod("worker-0"));
  const json other = api.Seed(resources::Pods(), Pod("worker-1"));
  EventRecorder recorder(api, "gang-scheduler");
  for (int i = 0; i < 3; ++i) {
    recorder.Record(ReferenceTo(pod), EventType::kNormal, "Scheduled", "bound to node-1");
  }
  // A different message, or another object, is an Event of its own.
  recorder.Record(ReferenceTo(pod), EventType::kNormal, "Scheduled", "bound to node-2");
  recorder.Record(ReferenceTo(other), EventType::kNormal, "Scheduled", "bound to node-1");
  ASSERT_TRUE(recorder.Flush(kPatience));

  const auto repeated = EventsAbout(api, "bound to node-1");
  ASSERT_EQ(repeated.size(), 2u);
  std::map<std::string, int> count_by_object;
  for (const json& event : repeated) {
    count_by_object[event["involvedObject"].value("name", "")] = event.value("count", 0);
  }
  EXPECT_EQ(count_by_object, (std::map<std::string, int>{{"worker-0", 3}, {"worker-1", 1}}));
  ASSERT_EQ(EventsAbout(api, "bound to node-2").size(), 1u);
  EXPECT_EQ(CountEventCreates(api), 3u);
  EXPECT_EQ(api.CountRequests("patch"), 2u);
  recorder.Stop();
}

// Events are best effort: a create the server refuses loses that one Event,
// without blocking anyone or leaving a stale aggregate behind.
class EventRecorderRefusalTest : public ::testing::TestWithParam<int> {
 protected:
  static Status Refusal(int http) {
    switch (http) {
      case 403:
        return ApiError(StatusCode::kForbidden, 403, "Forbidden");
      case 429:
        return Throttled();
      default:
        return ServerError();
    }
  }
};

TEST_P(EventRecorderRefusalTest, ARefusedCreateCostsOnlyThatEvent) {
  FakeApiClient api;
  const json pod = api.Seed(resources::Pods(), Pod("worker-0"));
  std::atomic<bool> refusing{true};
  api.SetFault(RefuseWhile(refusing, IsEventCreate, Refusal(GetParam())));
  EventRecorder recorder(api, "gang-scheduler");
  recorder.Record(ReferenceTo(pod), EventType::kWarning, "FailedScheduling", "0/3 nodes fit");
  ASSERT_TRUE(recorder.Flush(kPatience));
  EXPECT_EQ(CountEventCreates(api), 1u);
  EXPECT_TRUE(EventsIn(api, kNamespace).empty());

  refusing = false;
  recorder.Record(ReferenceTo(pod), EventType::kWarning, "FailedScheduling", "0/3 nodes fit");
  recorder.Record(ReferenceTo(pod), EventType::kNormal, "Scheduled", "bound to node-1");
  ASSERT_TRUE(recorder.Flush(kPatience));
  const auto retried = EventsAbout(api, "0/3 nodes fit");
  ASSERT_EQ(retried.size(), 1u);
  EXPECT_EQ(retried.front().value("count", 0), 1);
  EXPECT_EQ(EventsAbout(api, "bound to node-1").size(), 1u);
  EXPECT_EQ(api.CountRequests("patch"), 0u);  // nothing aggregated onto the lost one
  EXPECT_EQ(recorder.dropped(), 0u);
  recorder.Stop();
}

INSTANTIATE_TEST_SUITE_P(Codes, EventRecorderRefusalTest, ::testing::Values(403, 429, 500));

TEST(EventRecorderTest, ARefusedCountUpdateStartsAFreshEvent) {
  FakeApiClient api;
  const json pod = api.Seed(resources::Pods(), Pod("worker-0"));
  std::atomic<bool> refuse_patches{false};
  api.SetFault(RefuseWhile(refuse_patches, Verb("patch"), Throttled()));
  EventRecorder recorder(api, "gang-scheduler");
  auto record = [&] {
    recorder.Record(ReferenceTo(pod), EventType::kWarning, "FailedScheduling", "0/3 nodes fit");
    return recorder.Flush(kPatience);
  };
  ASSERT_TRUE(record());
  refuse_patches = true;
  ASSERT_TRUE(record());
  refuse_patches = false;
  ASSERT_TRUE(record());

  // Every occurrence is counted somewhere: the refused count went into a new
  // Event, which the next repeat then aggregates onto.
  const auto events = EventsAbout(api, "0/3 nodes fit");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].value("count", 0), 1);
  EXPECT_EQ(events[1].value("count", 0), 2);
  recorder.Stop();
}

TEST(EventRecorderTest, RecordNeverWaitsForAHungServerAndDropsBeyondItsQueue) {
  FakeApiClient api;
  const json pod = api.Seed(resources::Pods(), Pod("worker-0"));
  RequestGate gate;
  api.SetFault([&](const Request& request) -> std::optional<Status> {
    if (IsEventCreate(request)) {
      gate.PassWhenOpen();
    }
    return std::nullopt;
  });
  EventRecorder recorder(api, "gang-scheduler", /*max_pending=*/2);
  // Opened before the recorder stops, even when an assertion below fails.
  const OpenOnExit open_on_exit(gate);

  recorder.Record(ReferenceTo(pod), EventType::kNormal, "Step", "first");
  ASSERT_TRUE(gate.WaitForARequest(kPatience));
  // The writer is stuck on "first"; these return at once, the last dropped.
  recorder.Record(ReferenceTo(pod), EventType::kNormal, "Step", "second");
  recorder.Record(ReferenceTo(pod), EventType::kNormal, "Step", "third");
  recorder.Record(ReferenceTo(pod), EventType::kNormal, "Step", "fourth");
  EXPECT_EQ(recorder.dropped(), 1u);
  EXPECT_FALSE(recorder.Flush(20ms));

  gate.Open();
  ASSERT_TRUE(recorder.Flush(kPatience));
  std::set<std::string> written;
  for (const json& event : EventsIn(api, kNamespace)) {
    written.insert(event.value("message", ""));
  }
  EXPECT_EQ(written, (std::set<std::string>{"first", "second", "third"}));
  recorder.Stop();
}

TEST(EventRecorderTest, StopWritesWhatWasRecordedAndIgnoresWhatComesAfter) {
  FakeApiClient api;
  const json pod = api.Seed(resources::Pods(), Pod("worker-0"));
  EventRecorder recorder(api, "gang-scheduler");
  for (const char* message : {"one", "two", "three"}) {
    recorder.Record(ReferenceTo(pod), EventType::kNormal, "Step", message);
  }
  recorder.Stop();
  EXPECT_EQ(EventsIn(api, kNamespace).size(), 3u);
  recorder.Record(ReferenceTo(pod), EventType::kNormal, "Step", "late");
  EXPECT_TRUE(recorder.Flush(kPatience));
  EXPECT_EQ(EventsIn(api, kNamespace).size(), 3u);
}

}  // namespace
}  // namespace hybridjob::k8s
