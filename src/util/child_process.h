// A child process started with fork + exec: pinned to a CPU set before exec (so every thread it
// starts inherits the mask), killed with SIGTERM if this process dies (PR_SET_PDEATHSIG, so no
// orphan outlives a killed parent), and its stdout/stderr relayed line by line to our stderr
// with a prefix, keeping the last lines for error messages.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace kiln {

struct ChildSpec {
  std::string exe;                // absolute path
  std::vector<std::string> args;  // argv[1..]
  std::vector<int> cpus;          // affinity mask; empty: inherit ours
  std::string log_prefix;         // put before every relayed line, e.g. "[replica 0] "
  // Under JSON logs (log::Format::kJson) the prefix is left off: JSON lines get these members
  // added instead (e.g. "\"replica\":0"), and other lines become JSON log lines with them.
  std::string json_fields;
};

// A line of the child's output as this process relays it (without the newline).
std::string RelayedLine(const ChildSpec& spec, const std::string& line);

class ChildProcess {
 public:
  // Throws kiln::Error when the process cannot be created (exec failures show as exit 127).
  explicit ChildProcess(const ChildSpec& spec);
  // SIGKILLs the child's process group (the child runs in a group of its own), reaps it and
  // joins the relay thread.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int sig);
  // The wait status once the child exited (reaped by this call), nullopt while it runs.
  std::optional<int> PollExit();
  // Blocks until the child exited or `timeout_ms` passed; the wait status, or nullopt.
  std::optional<int> WaitExit(int timeout_ms);
  // The last lines the child printed, newline-separated.
  std::string Tail() const;

 private:
  void Relay(int fd, ChildSpec spec);

  pid_t pid_ = -1;
  std::optional<int> status_;
  std::atomic<bool> stop_relay_{false};
  std::thread relay_;
  mutable std::mutex tail_mu_;
  std::deque<std::string> tail_;
};

// "exited with code 1", "killed by signal 9 (Killed)".
std::string DescribeWaitStatus(int status);

// The absolute path of the running executable (/proc/self/exe).
std::string SelfExecutable();

}  // namespace kiln
