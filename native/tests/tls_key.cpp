// --key FILE (worker/tls.hpp's load_key), model-free: a key file of 0600 loads;
// one readable by others, too short, missing, a directory or a FIFO is refused
// in one line naming --key. A FIFO is refused at once: open() used to wait for
// a writer before the regular-file check, so a stage given one hung at start-up
// with no message and no deadline.
//
// usage: worker_tls_key DIR   (a scratch directory is made inside DIR)

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "check.hpp"
#include "worker/tls.hpp"

namespace {

std::string g_dir;

void write_file(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode);
  check(fd >= 0, "create " + path);
  if (fd < 0) return;
  check(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()),
        "write " + path);
  ::fchmod(fd, mode);  // whatever the umask
  ::close(fd);
}

void expect_refused(const std::string& path, const std::string& needle) {
  std::string error;
  const auto key = worker::net::load_key(path, error);
  check(!key.has_value(), path + ": accepted");
  const std::string line = "--key " + path + ": " + needle;
  check(error.rfind(line, 0) == 0 && error.find('\n') == std::string::npos,
        path + ": error `" + error + "` is not one line starting `" + line + "`");
}

// A FIFO that blocks load_key never returns: the alarm says so and fails the test.
extern "C" void blocked(int) {
  const char msg[] = "FAIL: --key on a FIFO blocked in load_key for 10 s\n"
                     "tls key: blocked\n";
  (void)!::write(STDOUT_FILENO, msg, sizeof msg - 1);
  ::_exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: worker_tls_key DIR\n");
    return 2;
  }
  std::string pattern = std::string(argv[1]) + "/tls-key-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::fprintf(stderr, "worker_tls_key: cannot make a directory in %s: %s\n", argv[1],
                 std::strerror(errno));
    return 2;
  }
  g_dir = pattern;
  const std::string hex(64, 'a');

  const std::string good = g_dir + "/chain.key";
  write_file(good, hex + "\n", 0600);
  std::string error;
  const auto key = worker::net::load_key(good, error);
  check(key.has_value() && error.empty(), "a 0600 key of 65 bytes: " + error);
  if (key) {
    check(key->identity.rfind("worker-chain-", 0) == 0 && key->identity.size() == 29,
          "identity " + key->identity);
  }

  const std::string open_key = g_dir + "/open.key";
  write_file(open_key, hex, 0644);
  expect_refused(open_key, "readable or writable by group or others (mode 0644); chmod 600 it");
  const std::string short_key = g_dir + "/short.key";
  write_file(short_key, "abc", 0600);
  expect_refused(short_key, "3 bytes; a key is 32 to 4096 random bytes");
  expect_refused(g_dir + "/missing.key", "cannot open: ");
  expect_refused(g_dir, "not a regular file");

  const std::string fifo = g_dir + "/fifo.key";
  check(::mkfifo(fifo.c_str(), 0600) == 0, "mkfifo " + fifo);
  ::signal(SIGALRM, blocked);
  ::alarm(10);
  expect_refused(fifo, "not a regular file");
  ::alarm(0);

  for (const char* name : {"chain.key", "open.key", "short.key", "fifo.key"}) {
    ::unlink((g_dir + "/" + name).c_str());
  }
  ::rmdir(g_dir.c_str());
  std::printf("tls key: %d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
