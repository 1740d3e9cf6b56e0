// Child processes for the pipeline driver and its tests (POSIX): start a
// program with its stdout on a pipe, read a line of it within a deadline,
// and wait for its exit within a deadline (killing it when it overstays).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace worker {

struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;  // the read end of the child's stdout, or -1
  int stderr_fd = -1;  // the read end of the child's stderr when captured, or -1
};

// Starts argv[0] with argv. The child's stdout goes to a pipe; its stderr to
// a pipe when capture_stderr, else it shares ours. Returns pid -1 and sets
// error when the program cannot be started.
Child spawn_child(const std::vector<std::string>& argv, bool capture_stderr, std::string& error);

// One line (without the newline) from fd within timeout_ms; false on EOF,
// error or timeout (error says which).
bool read_line(int fd, int timeout_ms, std::string& line, std::string& error);

// Everything readable from fd until EOF or timeout_ms.
std::string read_all(int fd, int timeout_ms);

// The child's exit code (128 + signal when killed by one). When it has not
// exited within timeout_ms it is killed (SIGKILL) and -1 is returned.
int wait_child(Child& child, int timeout_ms);

// Sends SIGKILL and reaps the child; closes its pipes.
void kill_child(Child& child);

}  // namespace worker
