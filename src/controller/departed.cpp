#include <algorithm>

#include <hybridjob/controller/departed.h>

namespace hybridjob::controller {

void DepartedMembers::PodDeleted(const std::string& key, const ObservedPod& pod,
                                 Clock::time_point now) {
  if (!pod.reclaimed || pod.index < 0) {
    return;
  }
  MutexLock lock(mu_);
  std::vector<Record>& records = records_[key];
  std::erase_if(records, [&](const Record& record) {
    return record.pod.role == pod.role && record.pod.index == pod.index;
  });
  records.push_back({pod, now});
}

std::vector<ObservedPod> DepartedMembers::For(const std::string& key,
                                              const std::vector<ObservedPod>& pods,
                                              Clock::time_point now) {
  MutexLock lock(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) {
    return {};
  }
  std::erase_if(it->second, [&](const Record& record) {
    if (now - record.deleted >= ttl_) {
      return true;
    }
    return std::any_of(pods.begin(), pods.end(), [&](const ObservedPod& pod) {
      return pod.role == record.pod.role && pod.index == record.pod.index &&
             pod.uid != record.pod.uid;
    });
  });
  if (it->second.empty()) {
    records_.erase(it);
    return {};
  }
  std::vector<ObservedPod> departed;
  departed.reserve(it->second.size());
  for (const Record& record : it->second) {
    departed.push_back(record.pod);
  }
  return departed;
}

void DepartedMembers::Forget(const std::string& key) {
  MutexLock lock(mu_);
  records_.erase(key);
}

size_t DepartedMembers::JobCount() const {
  MutexLock lock(mu_);
  return records_.size();
}

}  // namespace hybridjob::controller
