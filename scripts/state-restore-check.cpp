// What upstream llama.cpp itself does when a sequence's state is restored next to another one,
// built against an unpatched tree (no layer range anywhere): the filtered-state test of the stack
// compares its stages with the full model restored the same way, and these are the two places
// where the full model alone does not give its logits without a restore back.
//
//   state-restore-check MODEL             two sequences (8 and 7 tokens, ubatches of 5), with a
//                                         KV cache per sequence and with one for both: sequence 0
//                                         saved, removed and restored next to sequence 1, and both
//                                         restored into a new context; then one step of each, its
//                                         logits bit for bit against a run without the restore.
//                                         Exit 1 if any differ.
//   state-restore-check MODEL --device    the state of sequence 0 kept in the device buffers
//                                         (LLAMA_STATE_SEQ_FLAGS_ON_DEVICE) saved and restored,
//                                         with a KV cache per sequence, then with one for both.
#include "llama.h"
#include "upstream-check.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static std::vector<uint8_t> save(llama_context * ctx, llama_seq_id seq, llama_state_seq_flags flags = 0) {
    std::vector<uint8_t> state(llama_state_seq_get_size_ext(ctx, seq, flags));
    if (llama_state_seq_get_data_ext(ctx, state.data(), state.size(), seq, flags) != state.size()) {
        fprintf(stderr, "the state of sequence %d is not saved\n", seq);
        exit(2);
    }
    return state;
}

static void restore(llama_context * ctx, const std::vector<uint8_t> & state, llama_seq_id seq, llama_state_seq_flags flags = 0) {
    if (llama_state_seq_set_data_ext(ctx, state.data(), state.size(), seq, flags) != state.size()) {
        fprintf(stderr, "the state of sequence %d is not restored\n", seq);
        exit(2);
    }
}

enum restore_kind { NONE, IN_PLACE, NEW_CONTEXT };

// the logits of one step of both sequences after the prompts, with the restore of kind in between
static std::vector<float> run(llama_model * model, bool kv_unified, restore_kind kind) {
    llama_context * ctx = new_context(model, kv_unified);
    std::vector<llama_seq_id> seq;
    std::vector<llama_pos> pos;
    for (int i = 0; i < 15; i++) {
        seq.push_back(i < 8 ? 0 : 1);
        pos.push_back(i < 8 ? i : i - 8);
    }
    if (!decode(ctx, seq, pos)) {
        fprintf(stderr, "the prompts do not decode\n");
        exit(2);
    }
    if (kind == IN_PLACE) {
        const std::vector<uint8_t> state = save(ctx, 0);
        llama_memory_seq_rm(llama_get_memory(ctx), 0, -1, -1);
        restore(ctx, state, 0);
    } else if (kind == NEW_CONTEXT) {
        const std::vector<uint8_t> states[2] = { save(ctx, 0), save(ctx, 1) };
        llama_free(ctx);
        ctx = new_context(model, kv_unified);
        restore(ctx, states[0], 0);
        restore(ctx, states[1], 1);
    }
    if (!decode(ctx, { 0, 1 }, { 8, 7 })) {
        fprintf(stderr, "the step does not decode\n");
        exit(2);
    }
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    std::vector<float> logits;
    for (int32_t j = 0; j < 2; j++) {
        const float * row = llama_get_logits_ith(ctx, j);
        logits.insert(logits.end(), row, row + n_vocab);
    }
    llama_free(ctx);
    return logits;
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL [--device]\n", argv[0]);
        return 2;
    }
    const bool device = argc > 2 && std::string(argv[2]) == "--device";
    llama_model * model = load_model(argv[1]);
    int rc = 0;
    for (const bool kv_unified : { false, true }) {
        const char * cache = kv_unified ? "one KV cache for both sequences" : "a KV cache per sequence";
        if (device) {
            // an abort here ends the process: the line before it says which cache it was
            llama_context * ctx = new_context(model, kv_unified);
            if (!decode(ctx, { 0, 0, 0, 1, 1 }, { 0, 1, 2, 0, 1 })) {
                fprintf(stderr, "the prompts do not decode\n");
                return 2;
            }
            printf("%s: the state of sequence 0 kept on the device, restored ...\n", cache);
            fflush(stdout);
            restore(ctx, save(ctx, 0, LLAMA_STATE_SEQ_FLAGS_ON_DEVICE), 0, LLAMA_STATE_SEQ_FLAGS_ON_DEVICE);
            printf("%s: restored\n", cache);
            llama_free(ctx);
            continue;
        }
        const std::vector<float> expected = run(model, kv_unified, NONE);
        for (const restore_kind kind : { IN_PLACE, NEW_CONTEXT }) {
            const std::vector<float> got = run(model, kv_unified, kind);
            double max_diff = 0.0;
            for (size_t i = 0; i < got.size(); i++) {
                max_diff = std::fmax(max_diff, std::fabs(got[i] - expected[i]));
            }
            const bool same = memcmp(got.data(), expected.data(), got.size()*sizeof(float)) == 0;
            printf("%s: %s: %s (largest difference %g)\n", cache,
                kind == IN_PLACE ? "sequence 0 restored next to sequence 1" : "both sequences restored into a new context",
                same ? "logits bit-identical to no restore" : "logits differ from no restore", max_diff);
            rc |= same ? 0 : 1;
        }
    }
    llama_model_free(model);
    llama_backend_free();
    return rc;
}
