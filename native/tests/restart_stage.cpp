// The checkpoint CTests (consumer build only):
//
//   restart   a 3-stage pipeline [0,1)+[1,3)+[3,4) of worker processes runs 8
//             prompt tokens and STEPS greedy steps; its WHICH (middle or
//             first) stage saves a checkpoint after every step, is killed
//             (SIGKILL) once the checkpoint reaches step KILL_AT, and a new
//             worker process resumes from it on the same port; its neighbours
//             (the driver, for the first stage) wait for it (--recover-ms).
//             The driver's logits are written to OUT. GPU_LAYERS (optional,
//             "A,B,C") is each stage's --n-gpu-layers, first stage first.
//   refuse    a checkpoint of [1,3) offered to [0,2), to [1,3) of another
//             model, and a corrupted one: each refused with exit 25 and its line.
//
// usage: worker_restart_stage WORKER MODEL OTHER_MODEL WORK_DIR restart STEPS KILL_AT OUT WHICH [GPU_LAYERS]
//        worker_restart_stage WORKER MODEL OTHER_MODEL WORK_DIR refuse

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "worker/spawn.hpp"

namespace {

using worker::Child;

constexpr int kWait = 30000;

Child stage(const std::string& exe, const std::string& model, const std::string& layers,
            const std::string& listen, const std::vector<std::string>& extra,
            std::string& endpoint) {
  std::vector<std::string> argv = {exe, "--stage", "--model", model, "--layers", layers,
                                   "--listen", listen};
  argv.insert(argv.end(), extra.begin(), extra.end());
  std::string error, line;
  Child c = worker::spawn_child(argv, false, error);
  if (c.pid < 0 || !worker::read_line(c.stdout_fd, kWait, line, error)) {
    std::printf("stage %s did not start: %s\n", layers.c_str(), error.c_str());
    worker::kill_child(c);
    return c;
  }
  endpoint = line.substr(std::string("listening ").size());
  return c;
}

// The step recorded in a checkpoint's header (offset 20), or -1.
long checkpoint_step(const std::string& file) {
  std::ifstream f(file, std::ios::binary);
  std::vector<unsigned char> head(24);
  if (!f.read(reinterpret_cast<char*>(head.data()), 24)) return -1;
  return static_cast<long>(head[20] | head[21] << 8 | head[22] << 16 | head[23] << 24);
}

int finish(Child& c, const char* who) {
  const std::string out = worker::read_all(c.stdout_fd, kWait);
  const int code = worker::wait_child(c, kWait);
  std::printf("%s exit %d\n%s", who, code, out.c_str());
  return code;
}

// which: "middle" ([1, 3)) or "first" ([0, 1), the driver reconnects).
int restart(const std::string& exe, const std::string& model, const std::string& dir,
            int steps, long kill_at, const std::string& out, const std::string& which,
            const std::string& gpu_layers) {
  const bool first = which == "first";
  const std::string layers = first ? "0:1" : "1:3";
  const std::string range = first ? "[0, 1)" : "[1, 3)";
  const std::string ck = dir + "/" + which + ".ckpt";
  std::remove(ck.c_str());
  // WORKER_TEST_KEY=FILE: every link TLS with that key, reconnects included.
  const char* key = std::getenv("WORKER_TEST_KEY");
  std::vector<std::string> recover = {"--recover-ms", "20000"};
  if (key != nullptr && *key != '\0') recover.insert(recover.end(), {"--key", key});
  // Each stage's --n-gpu-layers: [0,1), [1,3), [3,4).
  std::vector<std::string> gpu;
  for (std::size_t from = 0; !gpu_layers.empty() && from <= gpu_layers.size();) {
    const std::size_t comma = std::min(gpu_layers.find(',', from), gpu_layers.size());
    gpu.push_back(gpu_layers.substr(from, comma - from));
    from = comma + 1;
  }
  if (!gpu.empty() && gpu.size() != 3) {
    std::printf("GPU_LAYERS needs 3 values, got `%s`\n", gpu_layers.c_str());
    return 1;
  }
  auto with = [&](std::vector<std::string> args, bool checkpoint, std::size_t index) {
    args.insert(args.end(), recover.begin(), recover.end());
    if (checkpoint) args.insert(args.end(), {"--checkpoint", ck});
    if (!gpu.empty()) args.insert(args.end(), {"--n-gpu-layers", gpu[index]});
    return args;
  };
  std::string ep3, ep2, ep1, ignored;
  Child last = stage(exe, model, "3:4", "127.0.0.1:0", with({}, false, 2), ep3);
  Child middle = stage(exe, model, "1:3", "127.0.0.1:0", with({"--next", ep3}, !first, 1), ep2);
  Child head = stage(exe, model, "0:1", "127.0.0.1:0", with({"--next", ep2}, first, 0), ep1);
  if (last.pid < 0 || middle.pid < 0 || head.pid < 0) return 1;

  std::string error;
  std::vector<std::string> drive = {exe, "--drive", "--model", model, "--connect", ep1, "--steps",
                                    std::to_string(steps), "--step-delay-ms", "150", "--logits-out",
                                    out, "--json"};
  drive.insert(drive.end(), recover.begin(), recover.end());
  Child driver = worker::spawn_child(drive, false, error);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (checkpoint_step(ck) < kill_at && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const long at = checkpoint_step(ck);
  Child& victim = first ? head : middle;
  worker::kill_child(victim);
  std::printf("killed the %s stage %s after its checkpoint of step %ld\n", which.c_str(),
              range.c_str(), at);
  const std::string listen = first ? ep1 : ep2;
  const std::string next = first ? ep2 : ep3;
  victim = stage(exe, model, layers, listen,
                 with({"--next", next, "--resume", ck}, true, first ? 0 : 1), ignored);
  if (victim.pid < 0) return 1;
  std::printf("restarted it from %s on %s\n", ck.c_str(), listen.c_str());

  const std::string report = worker::read_all(driver.stdout_fd, kWait);
  const int code = worker::wait_child(driver, kWait);
  const auto reconnects = report.find("\"reconnects\": ");
  std::printf("driver exit %d, reconnects %s\n", code,
              reconnects == std::string::npos ? "?" : report.substr(reconnects + 14, 1).c_str());
  int bad = code != 0;
  bad |= finish(head, first ? "stage [0, 1) (resumed)" : "stage [0, 1)") != 0;
  bad |= finish(middle, first ? "stage [1, 3)" : "stage [1, 3) (resumed)") != 0;
  bad |= finish(last, "stage [3, 4)") != 0;
  std::printf("%s\n", bad ? "the restarted pipeline FAILED" : "the restarted pipeline finished");
  return bad;
}

int refuse(const std::string& exe, const std::string& model, const std::string& other,
           const std::string& dir) {
  // A real checkpoint of [1, 3), from one step through [0,1)+[1,3)+[3,4).
  const std::string ck = dir + "/refuse.ckpt";
  std::remove(ck.c_str());
  std::string ep3, ep2, ep1;
  Child last = stage(exe, model, "3:4", "127.0.0.1:0", {}, ep3);
  Child middle = stage(exe, model, "1:3", "127.0.0.1:0", {"--next", ep3, "--checkpoint", ck}, ep2);
  Child head = stage(exe, model, "0:1", "127.0.0.1:0", {"--next", ep2}, ep1);
  std::string error;
  Child driver = worker::spawn_child(
      {exe, "--drive", "--model", model, "--connect", ep1, "--steps", "1"}, false, error);
  const int code = worker::wait_child(driver, kWait);
  for (Child* c : {&head, &middle, &last}) worker::wait_child(*c, kWait);
  std::printf("checkpoint written: driver exit %d, step %ld\n", code, checkpoint_step(ck));

  std::ifstream in(ck, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string foreign = dir + "/foreign.ckpt";  // another stack's fingerprint
  std::string edited = bytes;
  edited.replace(92, 64, std::string("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
  std::ofstream(foreign, std::ios::binary) << edited;
  const std::string corrupt = dir + "/corrupt.ckpt";
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x40);
  std::ofstream(corrupt, std::ios::binary) << bytes;

  struct Case {
    const char* name;
    std::string model, layers, file;
  };
  for (const Case& c : {Case{"other range", model, "0:2", ck}, Case{"other model", other, "1:3", ck},
                        Case{"other stack", model, "1:3", foreign},
                        Case{"corrupted", model, "1:3", corrupt}}) {
    Child w = worker::spawn_child({exe, "--stage", "--model", c.model, "--layers", c.layers,
                                   "--resume", c.file},
                                  true, error);
    const std::string err = worker::read_all(w.stderr_fd, kWait);
    std::printf("%s: exit %d: %s", c.name, worker::wait_child(w, kWait), err.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: worker_restart_stage WORKER MODEL OTHER_MODEL WORK_DIR restart|refuse ...\n");
    return 2;
  }
  const std::string exe = argv[1], model = argv[2], other = argv[3], dir = argv[4], what = argv[5];
  if (what == "restart" && (argc == 10 || argc == 11)) {
    return restart(exe, model, dir, std::atoi(argv[6]), std::atol(argv[7]), argv[8], argv[9],
                   argc == 11 ? argv[10] : "");
  }
  if (what == "refuse") return refuse(exe, model, other, dir);
  std::fprintf(stderr, "worker_restart_stage: bad arguments\n");
  return 2;
}
