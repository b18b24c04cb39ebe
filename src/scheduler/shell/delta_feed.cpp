#include <utility>

#include <spdlog/spdlog.h>

#include <hybridjob/scheduler/shell/delta_feed.h>

namespace hybridjob::scheduler {
namespace {

std::string MetadataField(const nlohmann::json& object, const char* field) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) {
    return {};
  }
  return metadata->value(field, "");
}

// Parses on the reflector's thread: the loop gets typed objects.
template <class T>
class ParsingSink final : public k8s::ReflectorSink {
 public:
  using Parser = Result<T> (*)(const nlohmann::json&);

  ParsingSink(DeltaFeed& feed, Parser parse, const char* kind, bool unparsable_is_gone)
      : feed_(feed), parse_(parse), kind_(kind), unparsable_is_gone_(unparsable_is_gone) {}

  void Replace(std::vector<nlohmann::json> items, const std::string&) override {
    Relist<T> relist;
    relist.objects.reserve(items.size());
    for (const nlohmann::json& item : items) {
      Result<T> parsed = parse_(item);
      if (parsed.ok()) {
        relist.objects.push_back(std::move(parsed).value());
      } else {
        Warn(item, parsed.status());
      }
    }
    feed_.Push(std::move(relist));
  }

  void Apply(k8s::WatchEventType type, nlohmann::json object) override {
    if (type != k8s::WatchEventType::kDeleted) {
      Result<T> parsed = parse_(object);
      if (parsed.ok()) {
        feed_.Push(Upsert<T>{std::move(parsed).value()});
        return;
      }
      Warn(object, parsed.status());
      if (!unparsable_is_gone_) {
        return;
      }
    }
    feed_.Push(Removal<T>{MetadataField(object, "namespace"), MetadataField(object, "name")});
  }

 private:
  void Warn(const nlohmann::json& object, const Status& status) const {
    const std::string ns = MetadataField(object, "namespace");
    const std::string name = MetadataField(object, "name");
    spdlog::warn("scheduler: skipping {} {}{}: {}", kind_, ns.empty() ? "" : ns + "/", name,
                 status.ToString());
  }

  DeltaFeed& feed_;
  Parser parse_;
  const char* kind_;
  bool unparsable_is_gone_;
};

}  // namespace

DeltaFeed::DeltaFeed()
    : node_sink_(std::make_unique<ParsingSink<NodeInfo>>(*this, &ParseNode, "node", false)),
      pod_sink_(std::make_unique<ParsingSink<PodInfo>>(*this, &ParsePod, "pod", false)),
      job_sink_(
          std::make_unique<ParsingSink<TrustedJob>>(*this, &ParseTrustedJob, "HybridJob", true)),
      namespace_sink_(std::make_unique<ParsingSink<NamespaceInfo>>(*this, &ParseNamespaceInfo,
                                                                   "namespace", false)),
      priority_class_sink_(std::make_unique<ParsingSink<PriorityClassInfo>>(
          *this, &ParsePriorityClassInfo, "PriorityClass", true)),
      claim_sink_(std::make_unique<ParsingSink<ClaimInfo>>(*this, &ParseClaim,
                                                           "PersistentVolumeClaim", true)),
      volume_sink_(
          std::make_unique<ParsingSink<VolumeInfo>>(*this, &ParseVolume, "PersistentVolume", true)),
      storage_class_sink_(std::make_unique<ParsingSink<StorageClassInfo>>(*this, &ParseStorageClass,
                                                                          "StorageClass", true)) {}

DeltaFeed::~DeltaFeed() = default;

void DeltaFeed::Push(Delta delta) {
  {
    MutexLock lock(mu_);
    queued_.push_back(std::move(delta));
  }
  cv_.notify_all();
}

std::vector<Delta> DeltaFeed::Take(std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(mu_);
  lock.WaitUntil(cv_, deadline, [this]() HJ_REQUIRES(mu_) { return woken_ || !queued_.empty(); });
  woken_ = false;
  std::vector<Delta> out;
  out.swap(queued_);
  return out;
}

void DeltaFeed::Wake() {
  {
    MutexLock lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

}  // namespace hybridjob::scheduler
