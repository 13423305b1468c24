#include "util/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include "util/error.h"

namespace kiln {
namespace {

ChildSpec Shell(const std::string& script) {
  ChildSpec spec;
  spec.exe = "/bin/sh";
  spec.args = {"-c", script};
  spec.log_prefix = "[test child] ";
  return spec;
}

TEST(ChildProcess, ExitStatusAndOutputTail) {
  ChildProcess child(Shell("echo first; echo second >&2; exit 3"));
  const std::optional<int> status = child.WaitExit(10'000);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(DescribeWaitStatus(*status), "exited with code 3");
  // The relay thread may still be reading the pipe: the tail is complete once it is joined,
  // but the two lines were written before exit, so they are there after a short wait.
  for (int i = 0; i < 100 && child.Tail().find("second") == std::string::npos; ++i) usleep(10'000);
  EXPECT_NE(child.Tail().find("first\nsecond\n"), std::string::npos) << child.Tail();
}

TEST(ChildProcess, PinnedToItsCpus) {
  ChildSpec spec = Shell("grep Cpus_allowed_list /proc/self/status");
  spec.cpus = {0};
  ChildProcess pinned(spec);
  ASSERT_TRUE(pinned.WaitExit(10'000).has_value());
  for (int i = 0; i < 100 && pinned.Tail().empty(); ++i) usleep(10'000);
  EXPECT_NE(pinned.Tail().find("Cpus_allowed_list:\t0\n"), std::string::npos) << pinned.Tail();
}

TEST(ChildProcess, SignalAndKillOnDestruction) {
  pid_t pid = 0;
  {
    ChildProcess child(Shell("sleep 30"));
    pid = child.pid();
    EXPECT_FALSE(child.PollExit().has_value());
  }
  // Reaped by the destructor at once (not after the sleep): the pid is no longer our child.
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);
  ChildProcess child(Shell("sleep 30"));
  child.Signal(SIGTERM);
  const std::optional<int> status = child.WaitExit(10'000);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(DescribeWaitStatus(*status).rfind("killed by signal 15", 0), 0u);
}

TEST(ChildProcess, ExecFailureIsExit127) {
  ChildSpec spec;
  spec.exe = "/nonexistent/kiln";
  ChildProcess child(spec);
  const std::optional<int> status = child.WaitExit(10'000);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(DescribeWaitStatus(*status), "exited with code 127");
}

TEST(ChildProcess, DoesNotInheritOurDescriptors) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);  // no O_CLOEXEC on purpose
  ChildProcess child(Shell("ls /proc/self/fd | wc -l"));
  ASSERT_TRUE(child.WaitExit(10'000).has_value());
  for (int i = 0; i < 100 && child.Tail().empty(); ++i) usleep(10'000);
  // 0, 1, 2 and the one ls opens for /proc/self/fd.
  EXPECT_EQ(child.Tail(), "4\n");
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace kiln
