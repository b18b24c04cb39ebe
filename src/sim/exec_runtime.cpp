#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <fstream>
#include <sched.h>
#include <set>
#include <signal.h>
#include <sstream>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <hybridjob/common/strings.h>
#include <hybridjob/sim/exec_runtime.h>

namespace hybridjob::sim {

// ---------------------------------------------------------------------------
// Launching one container process.
//
// Everything the child does between fork and exec is prepared in the parent:
// the child runs only system calls on strings that already exist, since the
// simulator has other threads and a forked child may not allocate.

namespace {

namespace fs = std::filesystem;

enum class OpCode {
  kMountOverlay,     // a = target, b = options
  kBindRecursive,    // a = source, b = target
  kMkdir,            // a = path (EEXIST is fine)
  kTouch,            // a = path: an empty file to bind a file onto
  kRemountReadOnly,  // a = target
  kUnlink,           // a = path (ENOENT is fine)
  kSymlink,          // a = link text, b = path
  kSetHostname,      // a = name
  kChroot,           // a = path
  kChdir,            // a = path
};

struct Op {
  OpCode code;
  const char* a = nullptr;
  const char* b = nullptr;
  size_t what = 0;  // index into Prepared::descriptions, for errors
};

struct Prepared {
  std::deque<std::string> strings;  // stable addresses for the pointers below
  // What each step does, for errors; the first is the namespaces' creation.
  std::vector<std::string> descriptions{"create the container's namespaces"};
  std::vector<Op> ops;
  std::vector<const char*> argv;
  std::vector<const char*> envp;
  std::vector<const char*> candidates;  // programs to try, in PATH order
  size_t exec_what = 0;

  const char* Keep(std::string text) {
    strings.push_back(std::move(text));
    return strings.back().c_str();
  }
  void Add(OpCode code, const std::string& a, const std::string& b, std::string what) {
    descriptions.push_back(std::move(what));
    ops.push_back({code, Keep(a), b.empty() ? nullptr : Keep(b), descriptions.size() - 1});
  }
  // mkdir -p of `path` below `root`, which exists.
  void MakeDirs(const std::string& root, const std::string& path) {
    std::string current = root;
    for (const auto& part : fs::path(path).relative_path()) {
      current += "/" + part.string();
      Add(OpCode::kMkdir, current, "", "create " + current.substr(root.size()));
    }
  }
};

// What a child reports through its status pipe when it cannot exec.
struct ChildFailure {
  int what;
  int error;
};

[[noreturn]] void Fail(int status_fd, size_t what) {
  ChildFailure failure{static_cast<int>(what), errno};
  (void)!write(status_fd, &failure, sizeof failure);
  _exit(127);
}

[[noreturn]] void ChildMain(const Prepared& p, int status_fd, int log_fd) {
  if (unshare(CLONE_NEWNS | CLONE_NEWUTS) != 0) {
    Fail(status_fd, 0);
  }
  // Nothing this child mounts may reach the host.
  if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    Fail(status_fd, 0);
  }
  for (const Op& op : p.ops) {
    int rc = 0;
    switch (op.code) {
      case OpCode::kMountOverlay:
        rc = mount("overlay", op.a, "overlay", 0, op.b);
        break;
      case OpCode::kBindRecursive:
        rc = mount(op.a, op.b, nullptr, MS_BIND | MS_REC, nullptr);
        break;
      case OpCode::kMkdir:
        rc = mkdir(op.a, 0755);
        if (rc != 0 && errno == EEXIST) {
          rc = 0;
        }
        break;
      case OpCode::kTouch: {
        const int fd = open(op.a, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        rc = fd < 0 ? -1 : close(fd);
        break;
      }
      case OpCode::kRemountReadOnly:
        rc = mount(nullptr, op.a, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr);
        break;
      case OpCode::kUnlink:
        rc = unlink(op.a);
        if (rc != 0 && errno == ENOENT) {
          rc = 0;
        }
        break;
      case OpCode::kSymlink:
        rc = symlink(op.a, op.b);
        break;
      case OpCode::kSetHostname:
        rc = sethostname(op.a, strlen(op.a));
        break;
      case OpCode::kChroot:
        rc = chroot(op.a);
        break;
      case OpCode::kChdir:
        rc = chdir(op.a);
        break;
    }
    if (rc != 0) {
      Fail(status_fd, op.what);
    }
  }
  const int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) {
    Fail(status_fd, p.exec_what);
  }
  // The status pipe goes to fd 3; every other descriptor of the simulator
  // (its API connections among them) is closed.
  if (status_fd != 3) {
    if (dup3(status_fd, 3, O_CLOEXEC) < 0) {
      Fail(status_fd, p.exec_what);
    }
    status_fd = 3;
  }
  close_range(4, ~0U, 0);
  setsid();
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    sigaction(sig, &default_action, nullptr);
  }
  // The supervisor gone, its containers go too.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int error = ENOENT;
  for (const char* candidate : p.candidates) {
    execve(candidate, const_cast<char* const*>(p.argv.data()),
           const_cast<char* const*>(p.envp.data()));
    if (errno != ENOENT && errno != ENOTDIR) {
      error = errno;
    }
  }
  errno = error;
  Fail(status_fd, p.exec_what);
}

// Forks the child and waits until it has exec'ed (the pipe closes) or
// reported why it could not.
Result<pid_t> Launch(const Prepared& prepared, int log_fd) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Internal(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return Unavailable(std::string("fork: ") + std::strerror(error));
  }
  if (pid == 0) {
    close(pipe_fds[0]);
    ChildMain(prepared, pipe_fds[1], log_fd);
  }
  close(pipe_fds[1]);
  ChildFailure failure{};
  ssize_t got = 0;
  do {
    got = read(pipe_fds[0], &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  close(pipe_fds[0]);
  if (got == static_cast<ssize_t>(sizeof failure)) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const std::string what =
        failure.what >= 0 && static_cast<size_t>(failure.what) < prepared.descriptions.size()
            ? prepared.descriptions[failure.what]
            : "start";
    if (static_cast<size_t>(failure.what) == prepared.exec_what && failure.error == ENOENT) {
      return NotFound(what + ": executable file not found in $PATH");
    }
    return Internal(what + ": " + std::strerror(failure.error));
  }
  return pid;
}

// The mount points of the host a container's root needs besides the root
// file system itself (/proc, /dev, /sys, and any other), outermost only: a
// recursive bind brings what is mounted below them.
std::vector<std::string> HostMounts() {
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::set<std::string> points;
  std::string line;
  while (std::getline(mountinfo, line)) {
    std::istringstream fields(line);
    std::string id, parent, device, root, point;
    fields >> id >> parent >> device >> root >> point;
    // Octal escapes: "\040" is a space.
    std::string decoded;
    for (size_t i = 0; i < point.size(); ++i) {
      if (point[i] == '\\' && i + 3 < point.size()) {
        decoded += static_cast<char>(std::stoi(point.substr(i + 1, 3), nullptr, 8));
        i += 3;
      } else {
        decoded += point[i];
      }
    }
    // The container's own names replace the host's.
    if (decoded != "/" && decoded != "/etc/hosts" && decoded != "/etc/hostname") {
      points.insert(decoded);
    }
  }
  std::vector<std::string> outermost;
  for (const std::string& point : points) {
    const bool nested = std::any_of(outermost.begin(), outermost.end(), [&](const std::string& o) {
      return point.compare(0, o.size() + 1, o + "/") == 0;
    });
    if (!nested) {
      outermost.push_back(point);
    }
  }
  return outermost;
}

// A ConfigMap or Secret volume as a kubelet writes it: the files in a
// generation directory, "..data" pointing at the current one, and a link per
// top-level name through "..data", so an update swaps every file at once.
Status WriteProjectedDir(const fs::path& dir, const std::map<std::string, VolumeFile>& files,
                         uint64_t generation) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string data_name = "..data-" + std::to_string(generation);
  const fs::path data_dir = dir / data_name;
  fs::remove_all(data_dir, ec);
  fs::create_directories(data_dir, ec);
  if (ec) {
    return Internal("create " + data_dir.string() + ": " + ec.message());
  }
  std::set<std::string> top_level;
  for (const auto& [path, file_data] : files) {
    const fs::path file = data_dir / path;
    fs::create_directories(file.parent_path(), ec);
    {
      std::ofstream out(file, std::ios::binary | std::ios::trunc);
      out << file_data.content;
      if (!out) {
        return Internal("write " + file.string());
      }
    }
    fs::permissions(file, static_cast<fs::perms>(file_data.mode & 07777), ec);
    top_level.insert(fs::path(path).begin()->string());
  }
  const fs::path link = dir / "..data_tmp";
  fs::remove(link, ec);
  fs::create_directory_symlink(data_name, link, ec);
  if (!ec) {
    fs::rename(link, dir / "..data", ec);
  }
  if (ec) {
    return Internal("swap " + (dir / "..data").string() + ": " + ec.message());
  }
  for (const std::string& name : top_level) {
    if (!fs::exists(fs::symlink_status(dir / name))) {
      fs::create_symlink(fs::path("..data") / name, dir / name, ec);
    }
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool old_generation = name.rfind("..data-", 0) == 0 && name != data_name;
    const bool stale_link = name.rfind("..", 0) != 0 && !top_level.contains(name);
    if (old_generation || stale_link) {
      fs::remove_all(entry.path(), ec);
    }
  }
  return Status::Ok();
}

Status WriteFileAtomically(const fs::path& path, const std::string& content) {
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) {
      return Internal("write " + temporary.string());
    }
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);
  return ec ? Internal("rename " + path.string() + ": " + ec.message()) : Status::Ok();
}

std::string LoopbackAddress(size_t index) {
  // 127.1.0.1 .. 127.1.255.254: every address of 127/8 is local on Linux.
  const size_t n = index;
  return "127.1." + std::to_string(n / 254) + "." + std::to_string(n % 254 + 1);
}

const char* kNetDirInContainer = "/etc/.hybridjob-sim";

// What the child of one container run does before it execs: its root (an
// overlay of the host's /), the host's other mounts, the pod's hosts file,
// the volumes, the hostname and working directory; then the program, looked
// up in the container's PATH.
Prepared PrepareLaunch(const fs::path& container_dir, const std::vector<std::string>& host_mounts,
                       const fs::path& net_dir, const std::vector<ExecBind>& binds,
                       const std::string& hostname, const std::string& working_dir,
                       const std::vector<std::string>& argv,
                       const std::vector<std::pair<std::string, std::string>>& env) {
  Prepared p;
  const std::string root = (container_dir / "root").string();
  p.Add(OpCode::kMountOverlay, root,
        "lowerdir=/,upperdir=" + (container_dir / "upper").string() +
            ",workdir=" + (container_dir / "work").string(),
        "mount the container's root (overlayfs)");
  for (const std::string& point : host_mounts) {
    if (fs::is_directory(point)) {
      p.Add(OpCode::kBindRecursive, point, root + point, "bind " + point);
    }
  }
  // /etc/hosts and /etc/hostname are links into a directory the runtime
  // rewrites as pods come and go.
  p.MakeDirs(root, kNetDirInContainer);
  p.Add(OpCode::kBindRecursive, net_dir.string(), root + kNetDirInContainer,
        "bind the pod's hosts file");
  for (const char* name : {"hosts", "hostname"}) {
    const std::string path = root + "/etc/" + name;
    p.Add(OpCode::kUnlink, path, "", std::string("replace /etc/") + name);
    p.Add(OpCode::kSymlink, std::string(".hybridjob-sim/") + name, path,
          std::string("link /etc/") + name);
  }
  std::error_code ec;
  for (const ExecBind& bind : binds) {
    if (!fs::exists(bind.source)) {
      fs::create_directories(bind.source, ec);  // a subPath a kubelet creates
    }
    const std::string target = root + bind.target;
    if (fs::is_directory(bind.source)) {
      p.MakeDirs(root, bind.target);
    } else {
      p.MakeDirs(root, fs::path(bind.target).parent_path().string());
      p.Add(OpCode::kTouch, target, "", "create " + bind.target);
    }
    p.Add(OpCode::kBindRecursive, bind.source.string(), target, "mount " + bind.target);
    if (bind.read_only) {
      p.Add(OpCode::kRemountReadOnly, target, "", "mount " + bind.target + " read-only");
    }
  }
  p.Add(OpCode::kSetHostname, hostname, "", "set the hostname");
  p.MakeDirs(root, working_dir);
  p.Add(OpCode::kChroot, root, "", "enter the container's root");
  p.Add(OpCode::kChdir, working_dir, "", "change to the working directory " + working_dir);

  for (const std::string& word : argv) {
    p.argv.push_back(p.Keep(word));
  }
  p.argv.push_back(nullptr);
  std::string path_value;
  for (const auto& [name, value] : env) {
    p.envp.push_back(p.Keep(name + "=" + value));
    if (name == "PATH") {
      path_value = value;
    }
  }
  p.envp.push_back(nullptr);
  const std::string& program = argv.front();
  if (program.find('/') != std::string::npos) {
    p.candidates.push_back(p.Keep(program));
  } else {
    for (std::string_view dir : Split(path_value, ':')) {
      p.candidates.push_back(p.Keep((dir.empty() ? "." : std::string(dir)) + "/" + program));
    }
  }
  p.descriptions.push_back("exec: \"" + program + "\"");
  p.exec_what = p.descriptions.size() - 1;

  return p;
}

}  // namespace

// ---------------------------------------------------------------------------
// The supervisor's state.

struct ExecRuntime::Command {
  enum class Kind { kRun, kStop, kRemove, kUpdateObject } kind;
  std::string uid;
  std::optional<ExecLaunch> launch;
  std::chrono::seconds grace{0};
  // kUpdateObject
  std::string namespace_name;
  bool secret = false;
  std::string name;
  std::shared_ptr<const ObjectData> data;
};

struct ExecRuntime::PodRun {
  struct Container {
    const ExecContainer* spec = nullptr;
    ExecContainerStatus status;
    pid_t pid = 0;
    bool started_once = false;
    std::optional<ExecClock::time_point> start_at;  // the next (re)start
    std::vector<fs::path> logs;                     // one per run
  };
  ExecLaunch launch;
  fs::path dir;
  size_t ip_index = 0;
  std::string ip;
  std::map<std::string, fs::path> volume_dirs;
  std::vector<Container> init;
  std::vector<Container> main;
  size_t next_init = 0;
  bool initialized = false;
  bool failed = false;  // an init container failed for good
  std::string phase = "Pending";
  std::string reason;
  std::string message;
  ExecClock::time_point start_time;
  bool stopping = false;
  bool stopped = false;
  bool remove_when_stopped = false;
  std::optional<ExecClock::time_point> kill_at;
  uint64_t version = 0;
  uint64_t volume_generation = 0;
  bool in_hosts = false;  // its name is in the pods' hosts files

  std::string Key() const { return launch.pod.namespace_name + "/" + launch.pod.name; }
  // As a headless Service's DNS: an ended pod has no address, so the name
  // of a member that ran before (an earlier run's) is the live one's.
  bool InHosts() const { return phase != "Succeeded" && phase != "Failed"; }
  bool AnyRunning() const {
    auto running = [](const Container& c) { return c.pid != 0; };
    return std::any_of(init.begin(), init.end(), running) ||
           std::any_of(main.begin(), main.end(), running);
  }
};

// ---------------------------------------------------------------------------

Result<std::unique_ptr<ExecRuntime>> ExecRuntime::Create(ExecRuntimeOptions options) {
  if (geteuid() != 0) {
    return InvalidArgument(
        "--exec runs containers in their own mount namespaces and needs root (run "
        "hybridjob-sim as root, or without --exec)");
  }
  std::error_code ec;
  fs::create_directories(options.state_dir / "probe" / "upper", ec);
  fs::create_directories(options.state_dir / "probe" / "work", ec);
  fs::create_directories(options.state_dir / "probe" / "root", ec);
  if (ec) {
    return InvalidArgument("--exec-dir " + options.state_dir.string() + ": " + ec.message());
  }
  options.state_dir = fs::canonical(options.state_dir, ec);
  // A container that only mounts its root and exits proves the host can.
  Prepared probe;
  const fs::path probe_dir = options.state_dir / "probe";
  probe.Add(OpCode::kMountOverlay, (probe_dir / "root").string(),
            "lowerdir=/,upperdir=" + (probe_dir / "upper").string() +
                ",workdir=" + (probe_dir / "work").string(),
            "mount an overlay of / (overlayfs)");
  probe.argv = {probe.Keep("/bin/true"), nullptr};
  probe.envp = {nullptr};
  probe.candidates = {"/bin/true", "/usr/bin/true"};
  probe.descriptions.push_back("exec /bin/true");
  probe.exec_what = probe.descriptions.size() - 1;
  const int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  Result<pid_t> pid = Launch(probe, null_fd);
  close(null_fd);
  if (pid.ok()) {
    int status = 0;
    waitpid(*pid, &status, 0);
  }
  fs::remove_all(probe_dir, ec);
  if (!pid.ok()) {
    return InvalidArgument("--exec cannot run containers on this host: " + pid.status().message());
  }
  std::unique_ptr<ExecRuntime> runtime(new ExecRuntime(std::move(options), HostMounts()));
  runtime->supervisor_ = std::thread([r = runtime.get()] { r->Loop(); });
  return runtime;
}

ExecRuntime::ExecRuntime(ExecRuntimeOptions options, std::vector<std::string> host_mounts)
    : options_(std::move(options)), host_mounts_(std::move(host_mounts)) {}

ExecRuntime::~ExecRuntime() {
  Shutdown();
}

fs::path ExecRuntime::VolumeDir(const std::string& volume_name) const {
  return options_.state_dir / "volumes" / volume_name;
}

void ExecRuntime::Enqueue(std::unique_ptr<Command> command) {
  MutexLock lock(mu_);
  commands_.push_back(std::move(command));
  wake_.notify_all();
}

void ExecRuntime::Run(ExecLaunch launch) {
  auto command = std::make_unique<Command>();
  command->kind = Command::Kind::kRun;
  command->uid = launch.pod.uid;
  command->launch = std::move(launch);
  Enqueue(std::move(command));
}

void ExecRuntime::Stop(const std::string& uid, std::chrono::seconds grace) {
  auto command = std::make_unique<Command>();
  command->kind = Command::Kind::kStop;
  command->uid = uid;
  command->grace = grace;
  Enqueue(std::move(command));
}

void ExecRuntime::Remove(const std::string& uid) {
  auto command = std::make_unique<Command>();
  command->kind = Command::Kind::kRemove;
  command->uid = uid;
  Enqueue(std::move(command));
}

void ExecRuntime::UpdateObject(const std::string& namespace_name, bool secret,
                               const std::string& name, std::shared_ptr<const ObjectData> data) {
  auto command = std::make_unique<Command>();
  command->kind = Command::Kind::kUpdateObject;
  command->namespace_name = namespace_name;
  command->secret = secret;
  command->name = name;
  command->data = std::move(data);
  Enqueue(std::move(command));
}

bool ExecRuntime::Has(const std::string& uid) const {
  MutexLock lock(mu_);
  return published_.contains(uid) ||
         std::any_of(commands_.begin(), commands_.end(), [&](const auto& command) {
           return command->kind == Command::Kind::kRun && command->uid == uid;
         });
}

std::optional<ExecPodStatus> ExecRuntime::PodStatus(const std::string& uid) const {
  MutexLock lock(mu_);
  auto it = published_.find(uid);
  if (it == published_.end()) {
    return std::nullopt;
  }
  return it->second.status;
}

Result<ExecLogFile> ExecRuntime::LogFile(const std::string& namespace_name, const std::string& pod,
                                         const std::string& container, bool previous) const {
  MutexLock lock(mu_);
  auto uid = uid_by_key_.find(namespace_name + "/" + pod);
  if (uid == uid_by_key_.end()) {
    return NotFound("pod \"" + pod + "\" in namespace \"" + namespace_name +
                    "\" is not running here");
  }
  const Published& published = published_.at(uid->second);
  auto logs = published.logs.find(container);
  if (logs == published.logs.end()) {
    return NotFound("container \"" + container + "\" in pod \"" + pod + "\" is not available");
  }
  const int runs = static_cast<int>(logs->second.size());
  const int run = previous ? runs - 2 : runs - 1;
  if (run < 0) {
    return NotFound(
        previous
            ? "previous terminated container \"" + container + "\" in pod \"" + pod + "\" not found"
            : "container \"" + container + "\" in pod \"" + pod + "\" is waiting to start");
  }
  return ExecLogFile{logs->second[run], uid->second, container, run};
}

bool ExecRuntime::Writing(const ExecLogFile& log) const {
  MutexLock lock(mu_);
  auto published = published_.find(log.uid);
  if (published == published_.end()) {
    return false;
  }
  auto logs = published->second.logs.find(log.container);
  auto running = published->second.running.find(log.container);
  return logs != published->second.logs.end() &&
         static_cast<int>(logs->second.size()) == log.run + 1 &&
         running != published->second.running.end() && running->second;
}

void ExecRuntime::Shutdown() {
  {
    MutexLock lock(mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
    wake_.notify_all();
  }
  if (supervisor_.joinable()) {
    supervisor_.join();
  }
}

// ---------------------------------------------------------------------------
// The supervisor loop.

void ExecRuntime::Loop() {
  constexpr auto kPoll = std::chrono::milliseconds(100);
  bool shutting_down = false;
  std::optional<std::chrono::steady_clock::time_point> shutdown_kill_at;
  while (true) {
    std::vector<std::unique_ptr<Command>> commands;
    {
      MutexLock lock(mu_);
      lock.WaitFor(wake_, kPoll, [this, shutting_down]() HJ_REQUIRES(mu_) {
        return (stopping_ && !shutting_down) || !commands_.empty();
      });
      commands.swap(commands_);
      if (stopping_ && !shutting_down) {
        shutting_down = true;
        shutdown_kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      }
    }
    for (auto& command : commands) {
      Apply(*command);
    }
    if (shutting_down) {
      for (auto& [uid, pod] : pods_) {
        if (!pod->stopping) {
          pod->stopping = true;
          SignalAll(*pod, SIGTERM);
        }
      }
      if (std::chrono::steady_clock::now() >= *shutdown_kill_at) {
        for (auto& [uid, pod] : pods_) {
          SignalAll(*pod, SIGKILL);
        }
      }
    }
    const auto now = ExecClock::now();
    bool hosts_changed = false;
    for (auto it = pods_.begin(); it != pods_.end();) {
      PodRun& pod = *it->second;
      Reap(pod, now);
      Advance(pod, now);
      hosts_changed |= pod.in_hosts != pod.InHosts();
      if (pod.remove_when_stopped && !pod.AnyRunning()) {
        RemoveFiles(pod);
        {
          MutexLock lock(mu_);
          published_.erase(it->first);
          if (auto key = uid_by_key_.find(pod.Key());
              key != uid_by_key_.end() && key->second == it->first) {
            uid_by_key_.erase(key);
          }
        }
        ips_in_use_[pod.ip_index] = false;
        it = pods_.erase(it);
        hosts_changed = true;
        continue;
      }
      ++it;
    }
    if (hosts_changed) {
      RefreshHosts();
    }
    std::vector<std::string> changed;
    changed.swap(changed_);
    if (options_.on_change) {
      for (const std::string& key : changed) {
        options_.on_change(key);
      }
    }
    if (shutting_down && std::none_of(pods_.begin(), pods_.end(), [](const auto& entry) {
          return entry.second->AnyRunning();
        })) {
      for (auto& [uid, pod] : pods_) {
        RemoveFiles(*pod);
      }
      pods_.clear();
      std::error_code ec;
      fs::remove_all(options_.state_dir / "pods", ec);
      return;
    }
  }
}

void ExecRuntime::Apply(Command& command) {
  auto found = pods_.find(command.uid);
  switch (command.kind) {
    case Command::Kind::kRun: {
      if (found != pods_.end()) {
        return;
      }
      auto pod = std::make_unique<PodRun>();
      pod->launch = std::move(*command.launch);
      auto free = std::find(ips_in_use_.begin(), ips_in_use_.end(), false);
      pod->ip_index = static_cast<size_t>(free - ips_in_use_.begin());
      if (free == ips_in_use_.end()) {
        ips_in_use_.push_back(true);
      } else {
        *free = true;
      }
      pod->ip = LoopbackAddress(pod->ip_index);
      PodRun& run = *pod;
      pods_.emplace(command.uid, std::move(pod));
      {
        MutexLock lock(mu_);
        uid_by_key_[run.Key()] = command.uid;
      }
      StartPod(run);
      RefreshHosts();
      return;
    }
    case Command::Kind::kStop:
      if (found != pods_.end() && !found->second->stopping) {
        PodRun& pod = *found->second;
        pod.stopping = true;
        pod.kill_at = ExecClock::now() + command.grace;
        SignalAll(pod, command.grace.count() > 0 ? SIGTERM : SIGKILL);
        spdlog::info("exec: stopping pod {} (grace {}s)", pod.Key(), command.grace.count());
      }
      return;
    case Command::Kind::kRemove:
      if (found != pods_.end()) {
        PodRun& pod = *found->second;
        pod.stopping = true;
        pod.remove_when_stopped = true;
        SignalAll(pod, SIGKILL);
      }
      return;
    case Command::Kind::kUpdateObject:
      for (auto& [uid, pod] : pods_) {
        if (pod->launch.pod.namespace_name != command.namespace_name || pod->stopping) {
          continue;
        }
        auto& objects =
            command.secret ? pod->launch.objects.secrets : pod->launch.objects.config_maps;
        if (!objects.contains(command.name) && command.data == nullptr) {
          continue;
        }
        if (command.data != nullptr) {
          objects[command.name] = *command.data;
        } else {
          objects.erase(command.name);
        }
        RewriteVolumesShowing(*pod, command.secret, command.name);
      }
      return;
  }
}

void ExecRuntime::RewriteVolumesShowing(PodRun& pod, bool secret, const std::string& name) {
  ++pod.volume_generation;
  for (const ExecVolume& volume : pod.launch.pod.volumes) {
    const bool shows =
        std::any_of(volume.projections.begin(), volume.projections.end(), [&](const auto& p) {
          return p.name == name && (p.kind == ExecVolume::Kind::kSecret) == secret;
        });
    if (!shows) {
      continue;
    }
    Result<std::map<std::string, VolumeFile>> files = VolumeFiles(volume, pod.launch.objects);
    if (!files.ok()) {
      continue;
    }
    if (Status s =
            WriteProjectedDir(pod.volume_dirs.at(volume.name), *files, pod.volume_generation);
        !s.ok()) {
      spdlog::warn("exec: pod {}: volume {}: {}", pod.Key(), volume.name, s.message());
    }
  }
}

void ExecRuntime::StartPod(PodRun& pod) {
  const ExecPod& spec = pod.launch.pod;
  pod.dir = options_.state_dir / "pods" / spec.uid;
  pod.start_time = ExecClock::now();
  std::error_code ec;
  fs::create_directories(pod.dir / "net", ec);
  for (const ExecContainer& c : spec.init_containers) {
    PodRun::Container container;
    container.spec = &c;
    container.status.name = c.name;
    container.status.image = c.image;
    container.status.reason = "PodInitializing";
    pod.init.push_back(std::move(container));
  }
  for (const ExecContainer& c : spec.containers) {
    PodRun::Container container;
    container.spec = &c;
    container.status.name = c.name;
    container.status.image = c.image;
    container.status.reason =
        spec.init_containers.empty() ? "ContainerCreating" : "PodInitializing";
    pod.main.push_back(std::move(container));
  }
  // Volumes.
  Status failure;
  for (const ExecVolume& volume : spec.volumes) {
    fs::path dir;
    switch (volume.kind) {
      case ExecVolume::Kind::kClaim: {
        auto claim = pod.launch.claim_dirs.find(volume.name);
        if (claim == pod.launch.claim_dirs.end()) {
          failure = InvalidArgument("volume " + volume.name + ": claim " + volume.source +
                                    " has no data directory");
          break;
        }
        dir = claim->second;
        fs::create_directories(dir, ec);
        break;
      }
      case ExecVolume::Kind::kHostPath:
        dir = volume.source;
        break;
      case ExecVolume::Kind::kConfigMap:
      case ExecVolume::Kind::kSecret: {
        dir = pod.dir / "volumes" / volume.name;
        Result<std::map<std::string, VolumeFile>> files = VolumeFiles(volume, pod.launch.objects);
        if (!files.ok()) {
          failure = files.status().WithContext("MountVolume.SetUp failed for volume \"" +
                                               volume.name + "\"");
          break;
        }
        if (Status s = WriteProjectedDir(dir, *files, 0); !s.ok()) {
          failure = s;
        }
        break;
      }
      case ExecVolume::Kind::kUnsupported:
        spdlog::warn("exec: pod {}: volume {} ({}) is mounted as an empty directory", pod.Key(),
                     volume.name, volume.source);
        [[fallthrough]];
      case ExecVolume::Kind::kEmptyDir:
        dir = pod.dir / "volumes" / volume.name;
        fs::create_directories(dir, ec);
        break;
    }
    pod.volume_dirs[volume.name] = dir;
  }
  if (!failure.ok()) {
    // As a kubelet whose mount failed: the pod stays Pending, saying why.
    for (auto& c : pod.main) {
      c.status.reason = "ContainerCreating";
      c.status.message = failure.message();
    }
    pod.message = failure.message();
    pod.stopping = true;  // nothing will start
    spdlog::warn("exec: pod {}: {}", pod.Key(), failure.message());
  }
  Publish(pod);
}

void ExecRuntime::RefreshHosts() {
  std::vector<HostsEntry> entries;
  for (const auto& [uid, pod] : pods_) {
    pod->in_hosts = pod->InHosts();
    if (pod->in_hosts) {
      entries.push_back({pod->ip, pod->launch.pod.namespace_name, pod->launch.pod.hostname,
                         pod->launch.pod.subdomain});
    }
  }
  for (const auto& [uid, pod] : pods_) {
    const HostsEntry self{pod->ip, pod->launch.pod.namespace_name, pod->launch.pod.hostname,
                          pod->launch.pod.subdomain};
    if (Status s = WriteFileAtomically(pod->dir / "net" / "hosts",
                                       HostsFile(self, entries, options_.cluster_domain));
        !s.ok()) {
      spdlog::warn("exec: pod {}: hosts: {}", pod->Key(), s.message());
    }
    (void)WriteFileAtomically(pod->dir / "net" / "hostname", pod->launch.pod.hostname + "\n");
  }
}

void ExecRuntime::SignalAll(PodRun& pod, int signal) {
  for (auto* group : {&pod.init, &pod.main}) {
    for (auto& c : *group) {
      if (c.pid != 0) {
        kill(-c.pid, signal);
      }
      c.start_at.reset();
    }
  }
}

namespace {

// The end of a container's log: enough for FallbackTerminationMessage.
std::string ReadLogTail(const fs::path& log) {
  constexpr std::streamoff kTail = 16 * 1024;
  std::ifstream in(log, std::ios::binary);
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size <= 0) {
    return "";
  }
  in.seekg(std::max<std::streamoff>(0, size - kTail));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void RecordExit(ExecContainerStatus& status, int exit_code, int signal, std::string reason,
                std::string message, ExecClock::time_point now) {
  status.state = ExecContainerStatus::State::kTerminated;
  status.exit_code = exit_code;
  status.signal = signal;
  status.reason = reason.empty() ? (exit_code == 0 ? "Completed" : "Error") : std::move(reason);
  status.message = std::move(message);
  status.finished_at = now;
}

}  // namespace

void ExecRuntime::AfterExit(PodRun& pod, bool init, size_t index, ExecClock::time_point now,
                            bool start_error) {
  if (pod.stopping || pod.failed) {
    return;
  }
  PodRun::Container& c = init ? pod.init[index] : pod.main[index];
  const ExecRestartPolicy policy = pod.launch.pod.restart_policy;
  const int code = c.status.exit_code;
  if (init && code == 0) {
    ++pod.next_init;
    return;
  }
  // Init containers run again after a failure unless the policy is Never.
  const bool again = init ? policy != ExecRestartPolicy::kNever : RestartsAfterExit(policy, code);
  if (!again) {
    pod.failed = init;
    return;
  }
  // A first exit runs again at once; a program that could not start waits a
  // step of back-off more, as starting it again at once fails the same way.
  const int restarts = c.status.restart_count;
  c.start_at = now + (start_error     ? RestartBackoff(restarts + 1)
                      : restarts == 0 ? std::chrono::seconds(0)
                                      : RestartBackoff(restarts));
}

void ExecRuntime::Reap(PodRun& pod, ExecClock::time_point now) {
  bool changed = false;
  for (bool init : {true, false}) {
    auto& containers = init ? pod.init : pod.main;
    for (size_t index = 0; index < containers.size(); ++index) {
      PodRun::Container& c = containers[index];
      if (c.pid == 0) {
        continue;
      }
      // Peek first: while the exited leader is not reaped, its process group
      // id cannot be reused, so what the container left running can be
      // killed with it.
      siginfo_t info{};
      if (waitid(P_PID, c.pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) {
        continue;
      }
      kill(-c.pid, SIGKILL);
      int status = 0;
      pid_t done = 0;
      do {
        done = waitpid(c.pid, &status, 0);
      } while (done < 0 && errno == EINTR);
      c.pid = 0;
      int code = 0;
      int signal = 0;
      if (done > 0 && WIFEXITED(status)) {
        code = WEXITSTATUS(status);
      } else if (done > 0 && WIFSIGNALED(status)) {
        signal = WTERMSIG(status);
        code = 128 + signal;
      }
      std::string message;
      if (code != 0 && c.spec->termination_message_policy == "FallbackToLogsOnError" &&
          !c.logs.empty()) {
        message = FallbackTerminationMessage(ReadLogTail(c.logs.back()));
      }
      RecordExit(c.status, code, signal, "", std::move(message), now);
      spdlog::info("exec: pod {} container {} exited with {}", pod.Key(), c.status.name, code);
      AfterExit(pod, init, index, now, /*start_error=*/false);
      changed = true;
    }
  }
  if (changed) {
    Publish(pod);
  }
}

void ExecRuntime::Advance(PodRun& pod, ExecClock::time_point now) {
  if (pod.stopping) {
    if (pod.kill_at && now >= *pod.kill_at && pod.AnyRunning()) {
      SignalAll(pod, SIGKILL);
      pod.kill_at.reset();
    }
    if (!pod.AnyRunning() && !pod.stopped) {
      pod.stopped = true;
      Publish(pod);
    }
    return;
  }
  const auto& deadline = pod.launch.pod.active_deadline;
  if (deadline && !pod.failed && pod.phase != "Succeeded" && pod.phase != "Failed" &&
      now >= pod.start_time + *deadline) {
    // As the kubelet's active-deadline handler: every container is killed.
    pod.failed = true;
    pod.reason = "DeadlineExceeded";
    pod.message = "Pod was active on the node longer than the specified deadline";
    SignalAll(pod, SIGKILL);
  }
  if (pod.failed) {
    if (pod.phase != "Failed") {
      pod.phase = "Failed";
      Publish(pod);
    }
    return;
  }
  if (!pod.initialized) {
    if (pod.next_init < pod.init.size()) {
      PodRun::Container& c = pod.init[pod.next_init];
      const bool due = !c.started_once || (c.start_at && now >= *c.start_at);
      if (c.pid == 0 && due) {
        StartContainer(pod, true, pod.next_init, now);
      }
      return;
    }
    pod.initialized = true;
    for (auto& c : pod.main) {
      c.status.reason = "ContainerCreating";
    }
    Publish(pod);
  }
  for (size_t i = 0; i < pod.main.size(); ++i) {
    PodRun::Container& c = pod.main[i];
    const bool due = !c.started_once || (c.start_at && now >= *c.start_at);
    if (c.pid == 0 && due) {
      StartContainer(pod, false, i, now);
    }
  }
  std::vector<ExecContainerStatus> statuses;
  for (const auto& c : pod.main) {
    statuses.push_back(c.status);
  }
  const std::string phase = PodPhaseFromContainers(statuses, pod.launch.pod.restart_policy);
  if (phase != pod.phase) {
    pod.phase = phase;
    Publish(pod);
  }
}

void ExecRuntime::StartContainer(PodRun& pod, bool init, size_t index, ExecClock::time_point now) {
  PodRun::Container& c = init ? pod.init[index] : pod.main[index];
  const ExecContainer& spec = *c.spec;
  const ExecPod& pod_spec = pod.launch.pod;
  const bool restart = c.started_once;
  c.start_at.reset();
  auto wait_with = [&](const std::string& reason, const Status& why) {
    c.status.state = ExecContainerStatus::State::kWaiting;
    c.status.reason = reason;
    c.status.message = why.message();
    c.start_at = now + std::chrono::seconds(10);  // try again, as a kubelet's sync does
    Publish(pod);
  };

  PodFields fields{pod.ip, pod.launch.host_ip};
  if (auto image = options_.image_paths.find(spec.image); image != options_.image_paths.end()) {
    fields.default_path = image->second;
  }
  auto env = ContainerEnvironment(pod_spec, spec, fields, pod.launch.objects);
  if (!env.ok()) {
    wait_with("CreateContainerConfigError", env.status());
    return;
  }
  const std::map<std::string, std::string> env_map(env->begin(), env->end());
  auto argv = ContainerArgv(spec, env_map);
  if (!argv.ok()) {
    wait_with("CreateContainerError", argv.status());
    return;
  }
  auto binds = ContainerBinds(spec, pod.volume_dirs);
  if (!binds.ok()) {
    wait_with("CreateContainerConfigError", binds.status());
    return;
  }

  if (restart && c.status.state == ExecContainerStatus::State::kTerminated) {
    c.status.last_terminated =
        ExecContainerStatus::Terminated{c.status.exit_code, c.status.reason, c.status.started_at,
                                        c.status.finished_at, c.status.message};
    ++c.status.restart_count;
  }
  c.started_once = true;
  const int run = c.status.restart_count;
  const fs::path container_dir = pod.dir / "containers" / (spec.name + "-" + std::to_string(run));
  std::error_code ec;
  fs::remove_all(container_dir, ec);
  for (const char* sub : {"upper", "work", "root"}) {
    fs::create_directories(container_dir / sub, ec);
  }
  const fs::path log = pod.dir / "logs" / spec.name / (std::to_string(run) + ".log");
  fs::create_directories(log.parent_path(), ec);
  c.logs.push_back(log);

  const Prepared p =
      PrepareLaunch(container_dir, host_mounts_, pod.dir / "net", *binds, pod_spec.hostname,
                    spec.working_dir.empty() ? "/" : spec.working_dir, *argv, *env);
  const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    wait_with("CreateContainerError", Internal("open " + log.string() + ": " + strerror(errno)));
    return;
  }
  c.status.started_at = now;
  Result<pid_t> pid = Launch(p, log_fd);
  close(log_fd);
  if (!pid.ok()) {
    // As containerd reports a process that could not start.
    RecordExit(c.status, 128, 0, "StartError", pid.status().message(), now);
    spdlog::warn("exec: pod {} container {}: {}", pod.Key(), spec.name, pid.status().message());
    AfterExit(pod, init, index, now, /*start_error=*/true);
    Publish(pod);
    return;
  }
  c.pid = *pid;
  c.status.state = ExecContainerStatus::State::kRunning;
  c.status.reason.clear();
  c.status.message.clear();
  c.status.exit_code = 0;
  c.status.signal = 0;
  spdlog::info("exec: pod {} container {} started (pid {}, address {})", pod.Key(), spec.name,
               c.pid, pod.ip);
  Publish(pod);
}

void ExecRuntime::Publish(PodRun& pod) {
  ++pod.version;
  Published published;
  ExecPodStatus& status = published.status;
  status.namespace_name = pod.launch.pod.namespace_name;
  status.name = pod.launch.pod.name;
  status.version = pod.version;
  status.phase = pod.phase;
  status.reason = pod.reason;
  status.message = pod.message;
  status.pod_ip = pod.ip;
  status.host_ip = pod.launch.host_ip;
  status.start_time = pod.start_time;
  status.initialized = pod.initialized;
  status.stopped = pod.stopped;
  for (bool init : {true, false}) {
    for (const auto& c : init ? pod.init : pod.main) {
      (init ? status.init_containers : status.containers).push_back(c.status);
      published.logs[c.status.name] = c.logs;
      published.running[c.status.name] = c.pid != 0;
    }
  }
  {
    MutexLock lock(mu_);
    published_[pod.launch.pod.uid] = std::move(published);
  }
  changed_.push_back(pod.Key());
}

void ExecRuntime::RemoveFiles(PodRun& pod) {
  std::error_code ec;
  fs::remove_all(pod.dir, ec);
  if (ec) {
    spdlog::warn("exec: pod {}: remove {}: {}", pod.Key(), pod.dir.string(), ec.message());
  }
}

}  // namespace hybridjob::sim
