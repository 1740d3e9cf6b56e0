// The stage mode's server (`worker --stage`, stage_server.cpp): what a stage
// runs with, and serving its layer range until the chain ends. stage_main.cpp
// reads the command line into StageOptions and loads the engine.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "checkpoint.hpp"
#include "engine.hpp"
#include "worker/net.hpp"
#include "worker/tls.hpp"

namespace worker::stage {

struct StageOptions {
  EngineOptions engine;
  net::Endpoint listen{"127.0.0.1", 0};
  std::optional<net::Endpoint> next;
  // --direct (a stage with --next): forward the state, never wait for a reply;
  // --answers (the last stage of such a chain): where the driver takes the replies.
  bool direct = false;
  std::optional<net::Endpoint> answers;
  // --ring (a direct chain's first and last stage): the last stage listens
  // there and feeds each greedy token of a ring's steps back to the first,
  // which connects to it; the driver sends the prompt and only reads replies.
  std::optional<net::Endpoint> ring;
  int timeout_ms = 30000;
  int recover_ms = 0;
  std::string checkpoint;
  std::string resume;
  std::optional<net::TlsKey> key;  // --key: every link TLS 1.3 with this PSK
};

// Listens, joins the chain, and answers frames until `end` or a failure (then
// reported to whoever waits for this stage, and on stderr): the process's exit
// code. last: the reply a resumed checkpoint replays (invalid when none).
int serve_stage(StageOptions o, std::unique_ptr<Engine> engine, Replay last);

}  // namespace worker::stage
