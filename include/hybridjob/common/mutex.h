// A mutex and its scoped lock carrying Clang's thread-safety annotations, so
// that the compiler checks that every member marked HJ_GUARDED_BY(mu_) is
// touched only with mu_ held (-Wthread-safety, on in Clang builds). With GCC
// the annotations compile to nothing and these are plain std::mutex wrappers.
//
//   Mutex mu_;
//   int count_ HJ_GUARDED_BY(mu_) = 0;
//   void Add() { MutexLock lock(mu_); ++count_; }
//   void AddLocked() HJ_REQUIRES(mu_) { ++count_; }
//
// Condition variables wait through the lock (MutexLock::Wait...), so the
// analysis sees the mutex held before and after the wait. A predicate that
// reads guarded members is annotated HJ_REQUIRES(mu_) itself.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define HJ_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define HJ_THREAD_ANNOTATION(x)
#endif

#define HJ_CAPABILITY(name) HJ_THREAD_ANNOTATION(capability(name))
#define HJ_SCOPED_CAPABILITY HJ_THREAD_ANNOTATION(scoped_lockable)
#define HJ_GUARDED_BY(mu) HJ_THREAD_ANNOTATION(guarded_by(mu))
#define HJ_PT_GUARDED_BY(mu) HJ_THREAD_ANNOTATION(pt_guarded_by(mu))
#define HJ_REQUIRES(...) HJ_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define HJ_EXCLUDES(...) HJ_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define HJ_ACQUIRE(...) HJ_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define HJ_ACQUIRE_SHARED(...) HJ_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define HJ_REQUIRES_SHARED(...) HJ_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define HJ_RELEASE(...) HJ_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define HJ_TRY_ACQUIRE(...) HJ_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define HJ_RETURN_CAPABILITY(mu) HJ_THREAD_ANNOTATION(lock_returned(mu))
#define HJ_NO_THREAD_SAFETY_ANALYSIS HJ_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace hybridjob {

class HJ_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() HJ_ACQUIRE() { mu_.lock(); }
  void Unlock() HJ_RELEASE() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope; waits on condition variables with it.
class HJ_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) HJ_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() HJ_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Lets go early (and takes it again) within the scope: for calls that must
  // not run under the lock, such as user callbacks and notifications.
  void Unlock() HJ_RELEASE() { lock_.unlock(); }
  void Lock() HJ_ACQUIRE() { lock_.lock(); }

  // The mutex is released while waiting and held again on return.
  void Wait(std::condition_variable& cv) { cv.wait(lock_); }
  template <typename Predicate>
  void Wait(std::condition_variable& cv, Predicate ready) {
    cv.wait(lock_, ready);
  }
  // False when the time ran out with `ready` still false.
  template <typename Rep, typename Period, typename Predicate>
  bool WaitFor(std::condition_variable& cv, std::chrono::duration<Rep, Period> timeout,
               Predicate ready) {
    return cv.wait_for(lock_, timeout, ready);
  }
  template <typename Clock, typename Duration, typename Predicate>
  bool WaitUntil(std::condition_variable& cv, std::chrono::time_point<Clock, Duration> deadline,
                 Predicate ready) {
    return cv.wait_until(lock_, deadline, ready);
  }
  template <typename Clock, typename Duration>
  std::cv_status WaitUntil(std::condition_variable& cv,
                           std::chrono::time_point<Clock, Duration> deadline) {
    return cv.wait_until(lock_, deadline);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

// Many readers or one writer.
class HJ_CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

 private:
  friend class ReaderMutexLock;
  friend class WriterMutexLock;
  std::shared_mutex mu_;
};

// Holds a SharedMutex shared (for reading) for its scope.
class HJ_SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex& mu) HJ_ACQUIRE_SHARED(mu) : lock_(mu.mu_) {}
  ~ReaderMutexLock() HJ_RELEASE() {}
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  std::shared_lock<std::shared_mutex> lock_;
};

// Holds a SharedMutex exclusively (for writing) for its scope.
class HJ_SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex& mu) HJ_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~WriterMutexLock() HJ_RELEASE() {}
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  std::unique_lock<std::shared_mutex> lock_;
};

}  // namespace hybridjob
