// What the checks of upstream's own behaviour (scripts/upstream-check.sh) share: the model, the
// context they run in (that of the stack's chain tests) and a batch of which every token is an output.
#pragma once

#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

// the model at path, with its MTP layers (a file that has them loads only with them); llama.cpp's log
// is silent unless LLAMA_LOG is set; exits if the model does not load
static llama_model * load_model(const char * path) {
    llama_backend_init();
    if (getenv("LLAMA_LOG") == nullptr) {
        llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    }
    llama_model_params mparams = llama_model_default_params();
    mparams.load_mtp = true;
    llama_model * model = llama_model_load_from_file(path, mparams);
    if (model == nullptr) {
        fprintf(stderr, "%s does not load\n", path);
        exit(2);
    }
    return model;
}

// two sequences, 128 cells, ubatches of 5, one thread; exits if the context is not made
static llama_context * new_context(llama_model * model, bool kv_unified = false) {
    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx           = 128;
    cparams.n_batch         = 64;
    cparams.n_ubatch        = 5;
    cparams.n_seq_max       = 2;
    cparams.n_threads       = 1;
    cparams.n_threads_batch = 1;
    cparams.kv_unified      = kv_unified;
    llama_context * ctx = llama_init_from_model(model, cparams);
    if (ctx == nullptr) {
        fprintf(stderr, "no context\n");
        exit(2);
    }
    return ctx;
}

// the tokens at pos of the sequences seq, each an output
static bool decode(llama_context * ctx, const std::vector<llama_seq_id> & seq, const std::vector<llama_pos> & pos) {
    llama_batch batch = llama_batch_init((int32_t) seq.size(), 0, 1);
    for (size_t i = 0; i < seq.size(); i++) {
        batch.token[i]     = 1 + (llama_token) (i*7 % 50);
        batch.pos[i]       = pos[i];
        batch.n_seq_id[i]  = 1;
        batch.seq_id[i][0] = seq[i];
        batch.logits[i]    = 1;
    }
    batch.n_tokens = (int32_t) seq.size();
    const bool ok = llama_decode(ctx, batch) == 0;
    llama_batch_free(batch);
    return ok;
}

// the logits of every token of two sequences of 5 and 4 tokens in one batch (two ubatches), decoded
// into the memory of ctx as it is; exits if the batch does not decode
static inline std::vector<float> two_sequence_logits(llama_context * ctx) {
    const std::vector<llama_seq_id> seq = { 0, 0, 0, 0, 0, 1, 1, 1, 1 };
    if (!decode(ctx, seq, { 0, 1, 2, 3, 4, 0, 1, 2, 3 })) {
        fprintf(stderr, "the batch does not decode\n");
        exit(2);
    }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx)));
    std::vector<float> logits;
    for (size_t i = 0; i < seq.size(); i++) {
        const float * row = llama_get_logits_ith(ctx, (int32_t) i);
        logits.insert(logits.end(), row, row + n_vocab);
    }
    return logits;
}
