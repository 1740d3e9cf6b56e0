// The stage mode (`worker --stage`) and the driver (`worker --drive`): a chain
// of worker processes, each running one layer range, joined by loopback TCP.
//
//   driver --tokens--> stage 0 --state--> stage 1 --state--> ... last stage
//   driver <-logits--- stage 0 <-logits-- stage 1 <-logits--- ... (relayed)
//
// A request/response hop per stage: each stage decodes its range, forwards its
// boundary state to --next and relays the reply back; the last stage answers
// with the logits and the greedy next token. A step longer than --batch
// streams: each chunk's state but the last goes on as a state part as soon as
// it is decoded (never answered), so the stages work on a prompt at once.
// `end` shuts the chain down in order (each stage forwards it and waits for
// the acknowledgement).
//
// A direct chain (--direct on every stage but the last, --answers on the
// last) sends nothing back up: the last stage answers the driver on a link
// of its own, and errors travel down the chain to it. A ring (--ring on the
// first and the last stage of a direct chain) also feeds each greedy token
// from the last stage straight to the first: the driver sends the prompt
// with the number of steps and only reads the replies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "worker/selftest.hpp"

namespace worker::stage {

// Entry points; args are the arguments after the program name. Each returns
// the process's exit code, having printed one line on stderr on failure.
int stage_main(const std::vector<std::string>& args);
int drive_main(const std::vector<std::string>& args, const std::string& exe);
int write_tiny_model_main(const std::vector<std::string>& args);

// --self-test's pipeline.two_stage: the tiny model in a temporary directory,
// a 2-stage pipeline of two child workers ([0,2) + [2,4)) against the full
// model in this process, bit-identical logits.
SelfTestCheck pipeline_check(const std::string& exe);

extern const char* const kStageUsage;

}  // namespace worker::stage
