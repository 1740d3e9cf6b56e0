#include "worker/spawn.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "worker/deadline.hpp"

namespace worker {
namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

Child spawn_child(const std::vector<std::string>& argv, bool capture_stderr, std::string& error) {
  Child child;
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  if (argv.empty() || ::pipe(out) != 0 || (capture_stderr && ::pipe(err) != 0)) {
    error = argv.empty() ? "nothing to start" : std::string("pipe: ") + std::strerror(errno);
    return child;
  }
  // Close-on-exec (macOS has no pipe2): no other child inherits these ends;
  // dup2 below clears the flag on the child's own stdout/stderr.
  for (int fd : {out[0], out[1], err[0], err[1]}) {
    if (fd >= 0) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    for (int fd : {out[0], out[1], err[0], err[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return child;
  }
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    if (capture_stderr) ::dup2(err[1], STDERR_FILENO);
    ::execv(args[0], args.data());
    const std::string msg = "worker: cannot start " + argv[0] + ": " + std::strerror(errno) + "\n";
    const ssize_t ignored = ::write(STDERR_FILENO, msg.data(), msg.size());
    (void)ignored;
    ::_exit(127);
  }
  ::close(out[1]);
  if (capture_stderr) ::close(err[1]);
  child.pid = pid;
  child.stdout_fd = out[0];
  child.stderr_fd = capture_stderr ? err[0] : -1;
  return child;
}

bool read_line(int fd, int timeout_ms, std::string& line, std::string& error) {
  const Deadline deadline(timeout_ms);
  line.clear();
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, deadline.remaining_ms());
    if (rc == 0) {
      error = "no line within " + std::to_string(timeout_ms) + " ms";
      return false;
    }
    if (rc < 0 && errno == EINTR) continue;
    char c = 0;
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n == 0 ? "the output ended" : std::string(std::strerror(errno));
      return false;
    }
    if (c == '\n') return true;
    line.push_back(c);
  }
}

std::string read_all(int fd, int timeout_ms) {
  const Deadline deadline(timeout_ms);
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, deadline.remaining_ms());
    if (rc == 0) return out;
    if (rc < 0 && errno == EINTR) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

int wait_child(Child& child, int timeout_ms) {
  if (child.pid <= 0) return -1;
  const Deadline deadline(timeout_ms);
  for (;;) {
    int status = 0;
    const pid_t rc = ::waitpid(child.pid, &status, WNOHANG);
    if (rc == child.pid) {
      child.pid = -1;
      close_fd(child.stdout_fd);
      close_fd(child.stderr_fd);
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return -1;
    }
    if (rc < 0 && errno != EINTR) return -1;
    if (deadline.remaining_ms() == 0) {
      kill_child(child);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void kill_child(Child& child) {
  if (child.pid > 0) {
    ::kill(child.pid, SIGKILL);
    int status = 0;
    ::waitpid(child.pid, &status, 0);
  }
  child.pid = -1;
  close_fd(child.stdout_fd);
  close_fd(child.stderr_fd);
}

}  // namespace worker
