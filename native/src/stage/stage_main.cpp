// The command line of `worker --stage`: the flags read strictly into
// StageOptions (every problem one usage line), the engine loaded and a
// checkpoint resumed, then the stage served (stage_server.cpp).
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "args.hpp"
#include "checkpoint.hpp"
#include "engine.hpp"
#include "pipeline.hpp"
#include "stage_server.hpp"
#include "worker/net.hpp"
#include "worker/tls.hpp"

namespace worker::stage {

int stage_main(const std::vector<std::string>& args) {
  StageOptions o;
  Args a(args);
  bool have_model = false, have_layers = false, insecure_plain = false;
  std::string key_file;
  auto usage = [](const std::string& why) {
    std::cerr << "worker: " << why << "\n" << kStageUsage;
    return 2;
  };
  while (!a.done()) {
    const std::string flag = a.flag();
    std::string text;
    long long n = 0;
    if (flag == "--model") {
      if (!a.value(flag, o.engine.model)) return usage(a.error);
      have_model = true;
    } else if (flag == "--layers") {
      if (!a.value(flag, text)) return usage(a.error);
      auto r = parse_range(text, a.error);
      if (!r) return usage("--layers: " + a.error);
      o.engine.layer_start = r->first;
      o.engine.layer_end = r->second;
      have_layers = true;
    } else if (flag == "--listen" || flag == "--next" || flag == "--answers" || flag == "--ring") {
      if (!a.value(flag, text)) return usage(a.error);
      auto ep = net::parse_endpoint(text, a.error);
      if (!ep) return usage(flag + ": " + a.error);
      (flag == "--listen"  ? o.listen
       : flag == "--next"  ? o.next.emplace()
       : flag == "--ring"  ? o.ring.emplace()
                           : o.answers.emplace()) = *ep;
    } else if (flag == "--direct") {
      o.direct = true;
    } else if (flag == "--threads") {
      if (!a.integer(flag, 1, 256, n)) return usage(a.error);
      o.engine.threads = static_cast<int>(n);
    } else if (flag == "--ctx") {
      if (!a.integer(flag, 16, 1 << 20, n)) return usage(a.error);
      o.engine.n_ctx = static_cast<std::uint32_t>(n);
    } else if (flag == "--batch") {
      if (!a.integer(flag, 1, 1 << 16, n)) return usage(a.error);
      o.engine.n_batch = static_cast<std::uint32_t>(n);
    } else if (flag == "--n-gpu-layers") {
      if (!a.integer(flag, 0, 1 << 20, n)) return usage(a.error);
      o.engine.n_gpu_layers = static_cast<std::int32_t>(n);
    } else if (flag == "--reply") {
      if (!a.value(flag, text)) return usage(a.error);
      if (!parse_reply(text, o.engine.reply)) return usage("--reply takes all, last or digest, not " + text);
    } else if (flag == "--flash-attn") {
      if (!a.value(flag, text)) return usage(a.error);
      if (!parse_flash_attn(text, o.engine.flash_attn)) return usage("--flash-attn takes auto, on or off, not " + text);
    } else if (flag == "--timeout-ms") {
      if (!a.integer(flag, 1, 86400000, n)) return usage(a.error);
      o.timeout_ms = static_cast<int>(n);
    } else if (flag == "--recover-ms") {
      if (!a.integer(flag, 0, 86400000, n)) return usage(a.error);
      o.recover_ms = static_cast<int>(n);
    } else if (flag == "--checkpoint" || flag == "--resume") {
      if (!a.value(flag, flag == "--checkpoint" ? o.checkpoint : o.resume)) return usage(a.error);
    } else if (flag == "--key") {
      if (!a.value(flag, key_file)) return usage(a.error);
    } else if (flag == "--insecure-plain") {
      insecure_plain = true;
    } else {
      return usage("unknown argument for --stage: " + flag);
    }
  }
  if (!have_model || !have_layers) return usage("--stage needs --model FILE and --layers START:END");
  if (o.direct && !o.next) {
    return usage("--direct is for a stage with --next; the last stage of a direct chain takes --answers HOST:PORT");
  }
  if (o.answers && o.next) return usage("--answers is the last stage's (no --next); the others take --direct");
  if ((o.direct || o.answers) && (o.recover_ms > 0 || !o.checkpoint.empty() || !o.resume.empty())) {
    return usage("a direct chain (--direct, --answers) keeps no reply to replay: "
                 "--recover-ms, --checkpoint and --resume need replies relayed");
  }
  if (o.ring) {
    const bool first = o.engine.layer_start == 0;
    if (o.answers ? first : !(o.direct && first)) {
      return usage(o.answers ? "--ring joins the last stage to the first: a chain of one stage has no ring"
                             : "--ring is for a direct chain's first stage (--direct, layers from 0), "
                               "which connects to it, and its last stage (--answers), which listens there");
    }
  }
  std::vector<std::pair<std::string, net::Endpoint>> links = {{"--listen", o.listen}};
  if (o.next) links.emplace_back("--next", *o.next);
  if (o.answers) links.emplace_back("--answers", *o.answers);
  if (o.ring) links.emplace_back("--ring", *o.ring);
  if (std::string why = link_security(key_file, insecure_plain, links, o.key); !why.empty()) {
    std::cerr << "worker: stage: " << why << "\n";
    return 2;
  }
  WireError e;
  std::unique_ptr<Engine> engine = Engine::load(o.engine, e);
  if (!engine) {
    std::cerr << "worker: stage: " << e.message << "\n";
    return e.code;
  }
  Replay last;
  if (!o.resume.empty()) {
    if (auto err = resume_checkpoint(o.resume, o.engine.model, *engine, last)) {
      std::cerr << "worker: stage " << engine->range_text() << ": " << err->message << "\n";
      return err->code;
    }
  }
  return serve_stage(std::move(o), std::move(engine), std::move(last));
}

}  // namespace worker::stage
