#include "util/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

constexpr size_t kTailLines = 40;

// Between fork and exec only async-signal-safe calls: everything is prepared before fork.
[[noreturn]] void ExecChild(char* const* argv, const cpu_set_t* cpus, int out_fd, pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(126);  // the parent died before prctl took effect
  setpgid(0, 0);  // a group of its own: the destructor kills whatever it started, too
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // the parent blocks SIGTERM for its sigwait
  if (cpus != nullptr) sched_setaffinity(0, sizeof(*cpus), cpus);
  const int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  dup2(out_fd, 1);
  dup2(out_fd, 2);
  // No descriptor of ours (listening socket, client connections) may live on in the child.
  if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
    for (int fd = 3; fd < 65536; ++fd) close(fd);
  }
  execv(argv[0], argv);
  _exit(127);
}

}  // namespace

ChildProcess::ChildProcess(const ChildSpec& spec) {
  std::vector<std::string> words;
  words.push_back(spec.exe);
  words.insert(words.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int c : spec.cpus) CPU_SET(c, &cpus);

  int pipe_fds[2];
  KILN_CHECK(pipe2(pipe_fds, O_CLOEXEC) == 0, "pipe: ", std::strerror(errno));
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    KILN_CHECK(false, "fork: ", std::strerror(errno));
  }
  if (pid_ == 0) ExecChild(argv.data(), spec.cpus.empty() ? nullptr : &cpus, pipe_fds[1], parent);
  close(pipe_fds[1]);
  relay_ = std::thread(&ChildProcess::Relay, this, pipe_fds[0], spec);
}

ChildProcess::~ChildProcess() {
  kill(-pid_, SIGKILL);  // its process group: the child and anything it started
  if (!status_) {
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  stop_relay_ = true;
  if (relay_.joinable()) relay_.join();
}

void ChildProcess::Signal(int sig) {
  if (!status_) kill(pid_, sig);
}

std::optional<int> ChildProcess::PollExit() {
  if (status_) return status_;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
  return status_;
}

std::optional<int> ChildProcess::WaitExit(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!PollExit()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    usleep(10'000);
  }
  return status_;
}

std::string ChildProcess::Tail() const {
  std::lock_guard<std::mutex> lock(tail_mu_);
  std::string out;
  for (const std::string& line : tail_) out += line + "\n";
  return out;
}

std::string RelayedLine(const ChildSpec& spec, const std::string& line) {
  if (log::CurrentFormat() != log::Format::kJson) return spec.log_prefix + line;
  std::string object = line;
  if (line.size() < 2 || line.front() != '{' || line.back() != '}') {
    const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    object = log::FormatLine(log::Format::kJson, log::Level::kInfo, "kiln::child", line, {}, now);
  }
  if (spec.json_fields.empty()) return object;
  if (object == "{}") return "{" + spec.json_fields + "}";
  return "{" + spec.json_fields + "," + object.substr(1);
}

void ChildProcess::Relay(int fd, ChildSpec spec) {
  std::string line;
  char buf[4096];
  for (;;) {
    // Woken every 100 ms to see stop_relay_: a descendant may hold the pipe open forever.
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) {
      if (stop_relay_) break;
      continue;
    }
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] != '\n') {
        line += buf[i];
        continue;
      }
      std::fprintf(stderr, "%s\n", RelayedLine(spec, line).c_str());
      std::lock_guard<std::mutex> lock(tail_mu_);
      tail_.push_back(std::move(line));
      if (tail_.size() > kTailLines) tail_.pop_front();
      line.clear();
    }
  }
  if (!line.empty()) {
    std::fprintf(stderr, "%s\n", RelayedLine(spec, line).c_str());
    std::lock_guard<std::mutex> lock(tail_mu_);
    tail_.push_back(std::move(line));
  }
  close(fd);
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return StrCat("exited with code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return StrCat("killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  }
  return StrCat("ended with wait status ", status);
}

std::string SelfExecutable() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  KILN_CHECK(!ec, "cannot find this program's path (/proc/self/exe): ", ec.message());
  return self.string();
}

}  // namespace kiln
