// Member pods the API server refused to create, per job, remembered until a
// create of that pod succeeds or the job is gone.
//
// A refusal is not in any cache: it is the answer to the controller's own
// write. The planner needs it to tell a pod still on its way from one the
// namespace's quota will not admit: then it commits the job with the members
// it has, if every role reaches its minimum (plan_membership.cpp). Lost on a
// restart, it is learnt again from the next refused create.
//
// Pure bookkeeping: no I/O; safe to call from any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <hybridjob/common/mutex.h>
#include <hybridjob/controller/observed.h>

namespace hybridjob::controller {

class RefusedCreates {
 public:
  // The create of `refused.pod` for job `key` (uid `job_uid`) was refused.
  void Refused(const std::string& key, const std::string& job_uid, RefusedCreate refused);
  // Pod `pod` of job `key` was created (or already existed).
  void Created(const std::string& key, const std::string& pod);

  // The refusals recorded for job `key` with uid `job_uid`; those of an
  // earlier job of that name are dropped.
  std::vector<RefusedCreate> For(const std::string& key, const std::string& job_uid);

  void Forget(const std::string& key);
  size_t JobCount() const;

 private:
  struct Job {
    std::string uid;
    std::map<std::string, RefusedCreate> by_pod;
  };

  mutable Mutex mu_;
  std::map<std::string, Job> jobs_ HJ_GUARDED_BY(mu_);  // by job key
};

}  // namespace hybridjob::controller
