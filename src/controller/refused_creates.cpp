#include <utility>

#include <hybridjob/controller/refused_creates.h>

namespace hybridjob::controller {

void RefusedCreates::Refused(const std::string& key, const std::string& job_uid,
                             RefusedCreate refused) {
  MutexLock lock(mu_);
  Job& job = jobs_[key];
  if (job.uid != job_uid) {
    job = Job{job_uid, {}};
  }
  std::string pod = refused.pod;
  job.by_pod[pod] = std::move(refused);
}

void RefusedCreates::Created(const std::string& key, const std::string& pod) {
  MutexLock lock(mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) {
    return;
  }
  it->second.by_pod.erase(pod);
  if (it->second.by_pod.empty()) {
    jobs_.erase(it);
  }
}

std::vector<RefusedCreate> RefusedCreates::For(const std::string& key, const std::string& job_uid) {
  MutexLock lock(mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) {
    return {};
  }
  if (it->second.uid != job_uid) {
    jobs_.erase(it);
    return {};
  }
  std::vector<RefusedCreate> out;
  out.reserve(it->second.by_pod.size());
  for (const auto& [pod, refused] : it->second.by_pod) {
    out.push_back(refused);
  }
  return out;
}

void RefusedCreates::Forget(const std::string& key) {
  MutexLock lock(mu_);
  jobs_.erase(key);
}

size_t RefusedCreates::JobCount() const {
  MutexLock lock(mu_);
  return jobs_.size();
}

}  // namespace hybridjob::controller
