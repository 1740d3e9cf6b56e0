// The command lines of the stage modes: --drive, --write-tiny-model, the
// usage text, and the self-test's pipeline.two_stage check.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <utility>

#include "args.hpp"
#include "driver.hpp"
#include "pipeline.hpp"
#include "tiny_model.hpp"
#include "worker/json.hpp"

namespace worker::stage {

const char* const kStageUsage =
    "\n"
    "stage mode (a worker built with WORKER_UPSTREAM_DIR):\n"
    "  worker --stage --model FILE --layers START:END [--listen HOST:PORT]\n"
    "         [--next HOST:PORT] [--threads N] [--ctx N] [--timeout-ms MS]\n"
    "         [--recover-ms MS] [--checkpoint FILE] [--resume FILE]\n"
    "         [--batch N] [--reply all|last|digest] [--n-gpu-layers N]\n"
    "         [--flash-attn auto|on|off]\n"
    "         [--direct | --answers HOST:PORT] [--ring HOST:PORT]\n"
    "         [--key FILE | --insecure-plain]\n"
    "  worker --drive --model FILE (--local | --split A:B,B:C,... [--direct] [--ring] |\n"
    "         --connect HOST:PORT [--answers HOST:PORT [--ring]])\n"
    "         [--prompt N] [--steps N] [--seed N] [--threads N] [--ctx N]\n"
    "         [--timeout-ms MS] [--recover-ms MS] [--step-delay-ms MS] [--check-local]\n"
    "         [--logits-out FILE] [--json] [--batch N] [--reply all|last|digest]\n"
    "         [--n-gpu-layers N|N,N,...] [--flash-attn auto|on|off]\n"
    "         [--key FILE | --insecure-plain]\n"
    "  worker --write-tiny-model FILE [--seed N] [--n-layer N] [--n-embd N] [--n-head N]\n"
    "         [--n-head-kv N] [--n-ff N] [--n-vocab N] [--type f32|f16|q8_0]\n"
    "\n"
    "  --stage          serve the layers [START, END) of the GGUF model FILE: read\n"
    "                   tokens (first stage) or boundary-state frames, forward the\n"
    "                   state to --next, relay its reply; the last stage answers\n"
    "                   with the logits and the greedy next token\n"
    "  --layers START:END  the layer range this stage loads and runs\n"
    "  --listen HOST:PORT  where to accept the previous stage or the driver\n"
    "                   (default 127.0.0.1:0: a port the OS picks); the stage\n"
    "                   prints `listening HOST:PORT` once the model is loaded\n"
    "  --next HOST:PORT the next stage (omit on the last stage)\n"
    "  --direct         a direct chain (a stage with --next): forward the state\n"
    "                   and never wait for a reply; the last stage answers the\n"
    "                   driver itself, one hop per stage fewer per step\n"
    "  --answers HOST:PORT  the last stage of a direct chain: where to accept the\n"
    "                   driver's answer link (port 0: the OS picks; the stage\n"
    "                   prints `answers HOST:PORT` after `listening`); a failure\n"
    "                   anywhere in the chain comes down it to the driver.\n"
    "                   Neither takes --recover-ms, --checkpoint or --resume\n"
    "  --ring HOST:PORT a direct chain that feeds itself: the last stage listens\n"
    "                   there (port 0: the OS picks; it prints `ring HOST:PORT`\n"
    "                   after `answers`) and sends each greedy token straight to\n"
    "                   the first stage (--direct, layers from 0), which connects\n"
    "                   to it; the driver sends the prompt with the step count\n"
    "                   and only reads the replies: one hop per step fewer again\n"
    "  --threads N      compute threads (default 1)\n"
    "  --flash-attn M   llama.cpp's flash attention: auto (default: on where the\n"
    "                   backend has it), on or off; --drive passes it to every\n"
    "                   stage and its --local reference (on one CPU thread at a\n"
    "                   depth of 512, off decoded 1.7 times as fast)\n"
    "  --ctx N          context size in tokens (default 256)\n"
    "  --batch N        llama.cpp's n_batch and n_ubatch (default 64); a longer\n"
    "                   step (a prompt) goes down the chain N tokens at a time,\n"
    "                   each chunk's state sent on as soon as it is decoded\n"
    "  --n-gpu-layers N llama.cpp's n_gpu_layers: 0 (default) the CPU backend only;\n"
    "                   N > 0: the last N layers of the stage's own range on the\n"
    "                   build's first device (Vulkan, ...), the output counting as\n"
    "                   the layer after the last (more than the range: all of it);\n"
    "                   --drive passes N to every stage it spawns and uses it for\n"
    "                   --local and --connect's reference model\n"
    "  --n-gpu-layers N,N,...  --drive --split: one value per stage, first stage\n"
    "                   first (0,99: a CPU stage, then an offloaded one); with\n"
    "                   --check-local the offloaded layers must be the model's\n"
    "                   last ones (CPU stages first), and the reference is the\n"
    "                   full model with that many layers (the output counting one)\n"
    "                   offloaded: the same placement\n"
    "  --reply MODE     what the last stage answers, the same on every stage and\n"
    "                   the driver: all (default) every row's logits; last the\n"
    "                   last row's logits only; digest the greedy token and the\n"
    "                   FNV-1a 64 of the last row's logits (4 exact floats of 16\n"
    "                   bits), for a driver that compares with a reference run\n"
    "  --timeout-ms MS  limit of every connect, accept, TLS handshake, write and\n"
    "                   whole frame read, however the peer slices it (default 30000)\n"
    "  --key FILE       every link (to the previous and next stage, the driver's,\n"
    "                   each reconnect) is TLS 1.3 with a pre-shared key: FILE holds\n"
    "                   32+ random bytes (openssl rand -hex 32), mode 0600 or\n"
    "                   stricter; the same FILE on every stage and the driver\n"
    "                   (--drive --split passes it on). Without --key a link must\n"
    "                   be loopback (127.0.0.0/8)\n"
    "  --insecure-plain plain TCP on purpose (loopback benchmarks): refused with\n"
    "                   --key or for any address beyond this host\n"
    "  --recover-ms MS  when a neighbour disconnects, wait this long for it to come\n"
    "                   back (reconnect to --next and resend; accept a new\n"
    "                   previous stage) instead of failing (default 0: fail);\n"
    "                   for --drive --connect: reconnect to the first stage\n"
    "  --checkpoint FILE  after every step, save this stage's sequence state with\n"
    "                   its layer range, model sha256, stack fingerprint and step\n"
    "  --resume FILE    start from a checkpoint of the same range, model and stack\n"
    "  --drive          run a prompt, then greedy single-token steps, through a\n"
    "                   pipeline and report logits, tokens and timings\n"
    "  --local          the whole model in this process (the reference)\n"
    "  --split A:B,...  spawn one stage process per range (ports from the OS);\n"
    "                   with --direct as a direct chain, with --ring as a ring\n"
    "  --connect HOST:PORT  a running pipeline's first stage; with --answers\n"
    "                   HOST:PORT, a direct chain's last stage answers there;\n"
    "                   --ring: its stages run with --ring\n"
    "  --prompt N       prompt tokens (default 8), drawn from SplitMix64(--seed)\n"
    "  --steps N        greedy single-token steps after the prompt (default 4)\n"
    "  --step-delay-ms MS  pause before each step (default 0)\n"
    "  --check-local    also run the whole model in this process and require\n"
    "                   bit-identical logits (exit 1 when they differ)\n"
    "  --logits-out FILE  every logit of every step, float32 little-endian\n"
    "  --write-tiny-model FILE  write the 4-layer llama test model, weights from\n"
    "                   SplitMix64(--seed) (default: the tests' model); the shape\n"
    "                   flags make a larger llama of the same kind (matrices in\n"
    "                   --type, norms f32), the same bytes for the same flags\n"
    "\n"
    "stage exit codes: 20 malformed, truncated, corrupt, wrong-width, oversized or\n"
    "non-finite frame, positions or tokens that do not fit, 21 peer disconnected or\n"
    "unreachable, or TLS refused (wrong key, plain and TLS mixed), 22 timeout,\n"
    "23 model or range failed,\n"
    "24 a stage further down reported an error, 25 checkpoint refused\n";

namespace {

int usage(const std::string& why) {
  std::cerr << "worker: " << why << "\n" << kStageUsage;
  return 2;
}

json::Value stage_json(const StageReport& s, std::int64_t& boundary_bytes, std::int64_t& boundary_tokens,
                       std::int64_t& width) {
  json::Object out{{"layers", "[" + std::to_string(s.start) + ", " + std::to_string(s.end) + ")"},
                   {"n_gpu_layers", static_cast<std::int64_t>(s.n_gpu_layers)},
                   {"endpoint", s.endpoint},
                   {"exit", s.exit_code}};
  json::ParseResult parsed = json::parse(s.stats);
  if (parsed.value) {
    const json::Value& v = *parsed.value;
    const auto get = [&](const char* key) {
      const json::Value* m = json::get(v, key);
      return m != nullptr ? json::as_int(*m).value_or(0) : 0;
    };
    if (get("frames_to_next") > 0) {
      boundary_bytes += get("bytes_to_next");
      boundary_tokens += get("tokens");
      width = get("n_embd_boundary");
    }
    out.emplace("stats", std::move(*parsed.value));
  }
  return out;
}

}  // namespace

int drive_main(const std::vector<std::string>& args, const std::string& exe) {
  DriveOptions o;
  Args a(args);
  std::string logits_out;
  bool as_json = false, check_local = false, insecure_plain = false;
  int modes = 0;
  while (!a.done()) {
    const std::string flag = a.flag();
    std::string text;
    long long n = 0;
    if (flag == "--model") {
      if (!a.value(flag, o.model)) return usage(a.error);
    } else if (flag == "--local") {
      o.mode = DriveOptions::kLocal;
      ++modes;
    } else if (flag == "--split") {
      if (!a.value(flag, text)) return usage(a.error);
      auto split = parse_split(text, a.error);
      if (!split) return usage("--split: " + a.error);
      o.split = *split;
      o.mode = DriveOptions::kSpawn;
      ++modes;
    } else if (flag == "--connect") {
      if (!a.value(flag, text)) return usage(a.error);
      auto ep = net::parse_endpoint(text, a.error);
      if (!ep) return usage("--connect: " + a.error);
      o.connect = *ep;
      o.mode = DriveOptions::kConnect;
      ++modes;
    } else if (flag == "--answers") {
      if (!a.value(flag, text)) return usage(a.error);
      auto ep = net::parse_endpoint(text, a.error);
      if (!ep) return usage("--answers: " + a.error);
      o.answers = *ep;
    } else if (flag == "--direct") {
      o.direct = true;
    } else if (flag == "--ring") {
      o.ring = true;
    } else if (flag == "--prompt" || flag == "--steps") {
      if (!a.integer(flag, flag == "--prompt" ? 1 : 0, 4096, n)) return usage(a.error);
      (flag == "--prompt" ? o.prompt : o.steps) = static_cast<int>(n);
    } else if (flag == "--seed") {
      if (!a.integer(flag, 0, INT64_MAX, n)) return usage(a.error);
      o.seed = static_cast<std::uint64_t>(n);
    } else if (flag == "--threads") {
      if (!a.integer(flag, 1, 256, n)) return usage(a.error);
      o.threads = static_cast<int>(n);
    } else if (flag == "--ctx") {
      if (!a.integer(flag, 16, 1 << 20, n)) return usage(a.error);
      o.n_ctx = static_cast<std::uint32_t>(n);
    } else if (flag == "--timeout-ms" || flag == "--step-delay-ms" || flag == "--recover-ms") {
      if (!a.integer(flag, flag == "--timeout-ms" ? 1 : 0, 86400000, n)) return usage(a.error);
      (flag == "--timeout-ms" ? o.timeout_ms : flag == "--recover-ms" ? o.recover_ms : o.step_delay_ms) =
          static_cast<int>(n);
    } else if (flag == "--batch") {
      if (!a.integer(flag, 1, 1 << 16, n)) return usage(a.error);
      o.n_batch = static_cast<std::uint32_t>(n);
    } else if (flag == "--n-gpu-layers") {
      if (!a.value(flag, text)) return usage(a.error);
      auto values = parse_gpu_layers(text, a.error);
      if (!values) return usage(a.error);
      o.n_gpu_layers = values->front();
      o.stage_gpu_layers = values->size() > 1 ? *values : std::vector<std::int32_t>{};
    } else if (flag == "--reply") {
      if (!a.value(flag, text)) return usage(a.error);
      if (!parse_reply(text, o.reply)) return usage("--reply takes all, last or digest, not " + text);
    } else if (flag == "--flash-attn") {
      if (!a.value(flag, text)) return usage(a.error);
      if (!parse_flash_attn(text, o.flash_attn)) return usage("--flash-attn takes auto, on or off, not " + text);
    } else if (flag == "--check-local") {
      check_local = true;
    } else if (flag == "--logits-out") {
      if (!a.value(flag, logits_out)) return usage(a.error);
    } else if (flag == "--json") {
      as_json = true;
    } else if (flag == "--key") {
      if (!a.value(flag, o.key_file)) return usage(a.error);
    } else if (flag == "--insecure-plain") {
      insecure_plain = true;
    } else {
      return usage("unknown argument for --drive: " + flag);
    }
  }
  if (o.model.empty()) return usage("--drive needs --model FILE");
  if (modes != 1) return usage("--drive needs exactly one of --local, --split and --connect");
  if (o.ring) {
    if (o.mode == DriveOptions::kLocal || (o.mode == DriveOptions::kConnect && !o.answers)) {
      return usage("--ring needs a direct chain: --split (2 stages or more), or --connect with the last stage's --answers");
    }
    if (o.mode == DriveOptions::kSpawn && o.split.size() < 2) {
      return usage("--ring joins the last stage to the first: --split needs 2 stages or more");
    }
    if (o.step_delay_ms > 0) return usage("--step-delay-ms pauses the driver's steps, and a ring feeds them itself");
    o.direct = o.mode == DriveOptions::kSpawn;  // a ring is a direct chain
  }
  if (o.direct && o.mode != DriveOptions::kSpawn) {
    return usage("--direct spawns a direct chain and needs --split (with --connect, name the last stage's --answers)");
  }
  if (o.answers && o.mode != DriveOptions::kConnect) return usage("--answers needs --connect");
  if ((o.direct || o.answers) && o.recover_ms > 0) {
    return usage("a direct chain keeps no reply to replay: --recover-ms needs replies relayed");
  }
  std::vector<std::pair<std::string, net::Endpoint>> links;
  if (o.mode == DriveOptions::kConnect) links.emplace_back("--connect", o.connect);
  if (o.answers) links.emplace_back("--answers", *o.answers);
  if (std::string why = link_security(o.key_file, insecure_plain, links, o.key); !why.empty()) {
    std::cerr << "worker: drive: " << why << "\n";
    return 2;
  }
  if (static_cast<std::uint32_t>(o.prompt + o.steps) > o.n_ctx) {
    return usage("--prompt + --steps exceed --ctx " + std::to_string(o.n_ctx));
  }
  if (!o.stage_gpu_layers.empty() && o.mode != DriveOptions::kSpawn) {
    return usage("--n-gpu-layers with one value per stage needs --split (--local and --connect take one value)");
  }
  if (!o.stage_gpu_layers.empty() && o.stage_gpu_layers.size() != o.split.size()) {
    return usage("--n-gpu-layers gives " + std::to_string(o.stage_gpu_layers.size()) + " values for the " +
                 std::to_string(o.split.size()) + " stages of --split (one per stage, or one for all)");
  }
  // --check-local's reference: the full model placed as the stages place
  // their layers (a --connect pipeline's placement is not known: the flag's).
  std::int32_t reference_gpu_layers = o.n_gpu_layers;
  bool reference_op_offload = true;
  if (check_local && o.mode == DriveOptions::kSpawn) {
    GgufSummary summary;
    if (read_gguf_summary(o.model, summary).empty() &&
        o.split.back().second == static_cast<std::int32_t>(summary.n_layer)) {
      std::string why;
      auto k = same_placement(o, static_cast<std::int32_t>(summary.n_layer), why);
      if (!k) return usage("--check-local: " + why + "; put the CPU stages first, then offload whole stages, or drop --check-local");
      reference_gpu_layers = k->n_gpu_layers;
      reference_op_offload = k->op_offload;
    }
  }

  DriveResult r;
  if (auto e = drive(o, exe, r)) {
    std::cerr << "worker: drive: " << e->message << "\n";
    return e->code;
  }
  json::Value identical = nullptr;
  std::string difference;
  if (check_local) {
    DriveOptions lo = o;
    lo.mode = DriveOptions::kLocal;
    lo.ring = false;
    lo.step_delay_ms = 0;
    lo.n_gpu_layers = reference_gpu_layers;
    lo.op_offload = reference_op_offload;
    lo.stage_gpu_layers.clear();
    DriveResult local;
    if (auto e = drive(lo, exe, local)) {
      std::cerr << "worker: drive: the local reference: " << e->message << "\n";
      return e->code;
    }
    difference = first_difference(r.logits, local.logits, r.n_vocab);
    if (difference.empty() && r.tokens != local.tokens) difference = "the greedy tokens differ";
    identical = difference.empty();
  }
  if (!logits_out.empty()) {
    if (auto e = write_logits(logits_out, r.logits)) {
      std::cerr << "worker: drive: " << e->message << "\n";
      return 3;
    }
  }
  std::int64_t boundary_bytes = 0, boundary_tokens = 0, width = 0;
  json::Array stages;
  for (const StageReport& s : r.stages) stages.push_back(stage_json(s, boundary_bytes, boundary_tokens, width));
  json::Array tokens;
  for (std::int32_t t : r.tokens) tokens.emplace_back(t);
  const int n_tok = o.prompt + o.steps;
  const double per_token = boundary_tokens > 0 ? static_cast<double>(boundary_bytes) / static_cast<double>(boundary_tokens) : 0.0;
  json::Object boundary{{"boundaries", static_cast<std::int64_t>(r.stages.empty() ? 0 : r.stages.size() - 1)},
                        {"n_embd_boundary", width},
                        {"wire_bytes", boundary_bytes},
                        {"bytes_per_token", per_token},
                        {"payload_bytes_per_token", static_cast<std::int64_t>(width > 0 ? 4 + 4 * width : 0)},
                        {"weights_per_token_bytes_ratio", per_token > 0 ? static_cast<double>(r.weight_bytes) / per_token : 0.0}};
  // One value for every stage, or the list given (one per stage).
  json::Value gpu_layers = static_cast<std::int64_t>(o.n_gpu_layers);
  if (!o.stage_gpu_layers.empty()) {
    json::Array per_stage;
    for (std::int32_t n : o.stage_gpu_layers) per_stage.emplace_back(static_cast<std::int64_t>(n));
    gpu_layers = std::move(per_stage);
  }
  const char* mode = o.mode == DriveOptions::kLocal ? "local" : o.mode == DriveOptions::kSpawn ? "spawn" : "connect";
  json::Object doc{{"mode", mode},
                   {"direct", o.direct || o.answers.has_value()},
                   {"ring", o.ring},
                   {"model", o.model},
                   {"n_layer", static_cast<std::int64_t>(r.n_layer)},
                   {"n_vocab", static_cast<std::int64_t>(r.n_vocab)},
                   {"weights_bytes", static_cast<std::int64_t>(r.weight_bytes)},
                   {"stages", std::move(stages)},
                   {"prompt_tokens", o.prompt},
                   {"steps", o.steps},
                   {"threads", o.threads},
                   {"batch", static_cast<std::int64_t>(o.n_batch)},
                   {"n_gpu_layers", std::move(gpu_layers)},
                   {"reply", reply_name(o.reply)},
                   {"flash_attn", flash_attn_name(o.flash_attn)},
                   {"tokens", std::move(tokens)},
                   {"logits_rows", static_cast<std::int64_t>(r.logits.size() / (r.n_vocab ? r.n_vocab : 1))},
                   {"logits_fnv1a64", logits_digest(r.logits)},
                   {"seconds", r.total_s},
                   {"prompt_seconds", r.prompt_s},
                   {"tokens_per_s", r.total_s > 0 ? n_tok / r.total_s : 0.0},
                   {"steps_per_s", r.total_s > r.prompt_s ? o.steps / (r.total_s - r.prompt_s) : 0.0},
                   {"boundary", std::move(boundary)},
                   {"reconnects", r.reconnects},
                   {"identical_to_local", identical},
                   {"local_n_gpu_layers", check_local ? json::Value(static_cast<std::int64_t>(reference_gpu_layers))
                                                      : json::Value(nullptr)}};
  if (as_json) {
    std::cout << json::dump(json::Value(std::move(doc))) << "\n";
  } else {
    std::cout << "drive: " << mode << ", " << r.stages.size() << " stage process(es), " << o.prompt
              << " prompt tokens + " << o.steps << " steps in " << r.total_s << " s ("
              << (r.total_s > 0 ? n_tok / r.total_s : 0.0) << " tokens/s)\n"
              << "logits: " << r.logits.size() / (r.n_vocab ? r.n_vocab : 1) << " rows, fnv1a64 "
              << logits_digest(r.logits) << "\n";
    if (width > 0) std::cout << "boundary: " << per_token << " bytes per token per boundary\n";
    if (check_local) {
      const std::string placed = reference_gpu_layers > 0
                                     ? " (--n-gpu-layers " + std::to_string(reference_gpu_layers) + ")"
                                     : "";
      std::cout << (difference.empty() ? "bit-identical to the full model in one process" + placed + "\n"
                                       : "DIFFERENT from the full model" + placed + ": " + difference + "\n");
    }
  }
  if (!difference.empty()) {
    std::cerr << "worker: drive: logits differ from the full model: " << difference << "\n";
    return 1;
  }
  std::cout.flush();
  return std::cout ? 0 : 3;
}

int write_tiny_model_main(const std::vector<std::string>& args) {
  TinyModelSpec spec;
  std::string file;
  Args a(args);
  const std::string form = "--write-tiny-model takes FILE [--seed N] [--n-layer N] [--n-embd N] "
                           "[--n-head N] [--n-head-kv N] [--n-ff N] [--n-vocab N] [--type f32|f16|q8_0]";
  while (!a.done()) {
    const std::string arg = a.flag();
    long long n = 0;
    std::uint32_t* dim = arg == "--n-layer"     ? &spec.n_layer
                         : arg == "--n-embd"    ? &spec.n_embd
                         : arg == "--n-head"    ? &spec.n_head
                         : arg == "--n-head-kv" ? &spec.n_head_kv
                         : arg == "--n-ff"      ? &spec.n_ff
                         : arg == "--n-vocab"   ? &spec.n_vocab
                                                : nullptr;
    if (arg == "--seed") {
      if (!a.integer(arg, 0, INT64_MAX, n)) return usage(a.error);
      spec.seed = static_cast<std::uint64_t>(n);
    } else if (dim != nullptr) {
      if (!a.integer(arg, 1, 1 << 20, n)) return usage(a.error);
      *dim = static_cast<std::uint32_t>(n);
    } else if (arg == "--type") {
      std::string text;
      if (!a.value(arg, text)) return usage(a.error);
      if (text == "f32") spec.type = TinyModelSpec::Type::kF32;
      else if (text == "f16") spec.type = TinyModelSpec::Type::kF16;
      else if (text == "q8_0") spec.type = TinyModelSpec::Type::kQ8_0;
      else return usage("--type takes f32, f16 or q8_0, not " + text);
    } else if (file.empty() && arg.rfind("--", 0) != 0) {
      file = arg;
    } else {
      return usage(form + ", not " + arg);
    }
  }
  if (file.empty()) return usage(form);
  if (std::string why = write_tiny_model(file, spec); !why.empty()) {
    std::cerr << "worker: " << why << "\n";
    return 3;
  }
  return 0;
}

SelfTestCheck pipeline_check(const std::string& exe) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::temp_directory_path(ec) / ("worker-selftest-" + std::to_string(::getpid()));
  fs::create_directories(dir, ec);
  const std::string model = (dir / "tiny-llama.gguf").string();
  SelfTestCheck check{"pipeline.two_stage", "fail", ""};
  if (std::string why = write_tiny_model(model); !why.empty()) {
    check.detail = why;
  } else {
    DriveOptions o;
    o.model = model;
    o.mode = DriveOptions::kSpawn;
    o.split = {{0, 2}, {2, 4}};
    DriveResult piped, local;
    std::optional<WireError> e = drive(o, exe, piped);
    if (!e) {
      o.mode = DriveOptions::kLocal;
      e = drive(o, exe, local);
    }
    if (e) {
      check.detail = e->message;
    } else if (std::string diff = first_difference(piped.logits, local.logits, piped.n_vocab);
               !diff.empty()) {
      check.detail = "stages [0, 2) + [2, 4) differ from the full model: " + diff;
    } else {
      check.status = "pass";
      check.detail = "tiny llama, 2 stage processes [0, 2) + [2, 4): " +
                     std::to_string(piped.logits.size() / piped.n_vocab) +
                     " logit rows bit-identical to the full model (fnv1a64 " +
                     logits_digest(piped.logits) + ")";
    }
  }
  fs::remove_all(dir, ec);
  return check;
}

}  // namespace worker::stage
