// Reproducer for running a layer range: a pipeline of stages, each owning the layers [layer_start,
// layer_end), gives the logits of the full model when each stage hands out the residual stream
// after its last layer (the boundary state) and the next one takes it in at its first layer.
//
// Uses only the public API (llama.h, gguf.h). It writes its own tiny model, so it needs no
// network. Against the pristine pin it does not compile.

#include "ggml.h"
#include "gguf.h"
#include "llama.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

static const int64_t n_layer   = 4;
static const int64_t n_embd    = 64;
static const int64_t n_head    = 4;
static const int64_t n_head_kv = 2;
static const int64_t n_ff      = 128;
static const int64_t n_vocab   = 128;

static int n_failed = 0;

static void check(bool ok, const std::string & what) {
    printf("%s: %s\n", ok ? "ok  " : "FAIL", what.c_str());
    n_failed += ok ? 0 : 1;
}

static void write_model(const std::string & fname) {
    gguf_context * gctx = gguf_init_empty();
    gguf_set_val_str(gctx, "general.architecture", "llama");
    gguf_set_val_u32(gctx, "llama.vocab_size", n_vocab);
    gguf_set_val_u32(gctx, "llama.context_length", 128);
    gguf_set_val_u32(gctx, "llama.embedding_length", n_embd);
    gguf_set_val_u32(gctx, "llama.feed_forward_length", n_ff);
    gguf_set_val_u32(gctx, "llama.block_count", n_layer);
    gguf_set_val_u32(gctx, "llama.attention.head_count", n_head);
    gguf_set_val_u32(gctx, "llama.attention.head_count_kv", n_head_kv);
    gguf_set_val_f32(gctx, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    gguf_set_val_str(gctx, "tokenizer.ggml.model", "no_vocab");

    ggml_init_params params = { 16*1024*1024, nullptr, false };
    ggml_context * ctx = ggml_init(params);

    std::mt19937 rng(42);
    std::normal_distribution<float> dist(0.0f, 0.1f);
    auto add = [&](const std::string & name, int64_t ne0, int64_t ne1, bool norm = false) {
        ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, ne0, ne1);
        ggml_set_name(t, name.c_str());
        for (int64_t i = 0; i < ggml_nelements(t); i++) {
            ((float *) t->data)[i] = norm ? 1.0f + dist(rng) : dist(rng);
        }
        gguf_add_tensor(gctx, t);
    };

    const int64_t n_embd_gqa = n_embd/n_head*n_head_kv;
    add("token_embd.weight", n_embd, n_vocab);
    for (int64_t il = 0; il < n_layer; il++) {
        const std::string p = "blk." + std::to_string(il) + ".";
        add(p + "attn_norm.weight",   n_embd, 1, true);
        add(p + "attn_q.weight",      n_embd, n_embd);
        add(p + "attn_k.weight",      n_embd, n_embd_gqa);
        add(p + "attn_v.weight",      n_embd, n_embd_gqa);
        add(p + "attn_output.weight", n_embd, n_embd);
        add(p + "ffn_norm.weight",    n_embd, 1, true);
        add(p + "ffn_gate.weight",    n_embd, n_ff);
        add(p + "ffn_down.weight",    n_ff,   n_embd);
        add(p + "ffn_up.weight",      n_embd, n_ff);
    }
    add("output_norm.weight", n_embd, 1, true);
    add("output.weight",      n_embd, n_vocab);

    if (!gguf_write_to_file(gctx, fname.c_str(), false)) {
        fprintf(stderr, "failed to write %s\n", fname.c_str());
        exit(1);
    }
    ggml_free(ctx);
    gguf_free(gctx);
}

struct stage {
    llama_model   * model = nullptr;
    llama_context * ctx   = nullptr;
};

static stage load(const std::string & fname, int32_t layer_start, int32_t layer_end) {
    llama_model_params mparams = llama_model_default_params();
    mparams.layer_start = layer_start;
    mparams.layer_end   = layer_end;

    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx     = 64;
    cparams.n_batch   = 64;
    cparams.n_ubatch  = 64;
    cparams.n_threads = cparams.n_threads_batch = 1;

    stage ret;
    ret.model = llama_model_load_from_file(fname.c_str(), mparams);
    if (ret.model) {
        // a stage before the last hands out the boundary state of every token as its embeddings
        if (layer_end >= 0 && layer_end < llama_model_n_layer(ret.model)) {
            cparams.embeddings   = true;
            cparams.pooling_type = LLAMA_POOLING_TYPE_NONE;
        }
        ret.ctx = llama_init_from_model(ret.model, cparams);
    }
    return ret;
}

// an 8-token prompt and 4 greedy single-token steps through the chain; returns all logits
static std::vector<float> run(const std::vector<stage> & stages) {
    std::vector<llama_token> tokens = { 1, 17, 42, 5, 99, 3, 64, 127 };
    std::vector<float> ret;
    int32_t n_past = 0;
    for (int step = 0; step <= 4; step++) {
        const int32_t n_tokens = step == 0 ? (int32_t) tokens.size() : 1;
        std::vector<float> state;
        for (size_t i = 0; i < stages.size(); i++) {
            // the boundary state: what the previous stage hands out, what this one takes in
            const int32_t n_boundary = i + 1 < stages.size() ? llama_model_n_embd_out(stages[i].model) : llama_model_n_embd_inp(stages[i].model);
            llama_batch batch = llama_batch_init(n_tokens, i == 0 ? 0 : llama_model_n_embd_inp(stages[i].model), 1);
            for (int32_t j = 0; j < n_tokens; j++) {
                if (i == 0) {
                    batch.token[j] = tokens[n_past + j];
                }
                batch.pos[j]       = n_past + j;
                batch.n_seq_id[j]  = 1;
                batch.seq_id[j][0] = 0;
                batch.logits[j]    = true;
            }
            if (i > 0) {
                memcpy(batch.embd, state.data(), state.size()*sizeof(float));
            }
            batch.n_tokens = n_tokens;
            const int rc = llama_decode(stages[i].ctx, batch);
            llama_batch_free(batch);
            if (rc != 0) {
                return {};
            }
            state.assign((size_t) n_tokens*n_boundary, 0.0f);
            for (int32_t j = 0; i + 1 < stages.size() && j < n_tokens; j++) {
                const float * embd = llama_get_embeddings_ith(stages[i].ctx, j);
                if (embd == nullptr) {
                    return {};
                }
                memcpy(state.data() + (size_t) j*n_boundary, embd, n_boundary*sizeof(float));
            }
        }
        for (int32_t j = 0; j < n_tokens; j++) {
            const float * logits = llama_get_logits_ith(stages.back().ctx, j);
            ret.insert(ret.end(), logits, logits + n_vocab);
        }
        n_past += n_tokens;
        const float * last = llama_get_logits_ith(stages.back().ctx, n_tokens - 1);
        tokens.push_back(std::max_element(last, last + n_vocab) - last);
    }
    return ret;
}

static void free_stage(stage & s) {
    llama_free(s.ctx);
    llama_model_free(s.model);
}

int main() {
    llama_backend_init();
    const std::string fname = (std::filesystem::temp_directory_path() / "boundary-io-reproducer.gguf").string();
    write_model(fname);

    stage full = load(fname, 0, -1);
    check(full.ctx != nullptr, "the full model loads");
    const std::vector<float> expected = run({ full });
    check(expected.size() == (8 + 4)*n_vocab, "the full model decodes 8 tokens and 4 steps");

    const int32_t chains[][2][2] = { { {0, 2}, {2, 4} }, { {0, 3}, {3, 4} } };
    for (const auto & chain : chains) {
        std::vector<stage> stages = { load(fname, chain[0][0], chain[0][1]), load(fname, chain[1][0], chain[1][1]) };
        const std::string what = "[" + std::to_string(chain[0][0]) + ", " + std::to_string(chain[0][1]) + ") + [" +
            std::to_string(chain[1][0]) + ", " + std::to_string(chain[1][1]) + ")";
        check(stages[0].ctx != nullptr && stages[1].ctx != nullptr, what + " load and run");
        check(stages[0].ctx != nullptr && llama_model_n_embd_out(stages[0].model) == n_embd && llama_get_logits(stages[0].ctx) == nullptr,
            what + ": the first stage hands out n_embd floats per token and has no logits");
        if (stages[0].ctx != nullptr && stages[1].ctx != nullptr) {
            const std::vector<float> got = run(stages);
            check(got.size() == expected.size() && memcmp(got.data(), expected.data(), got.size()*sizeof(float)) == 0,
                what + " give the logits of the full model, bit for bit");
        }
        for (auto & s : stages) {
            free_stage(s);
        }
    }

    // a stage without the token embeddings rejects tokens instead of crashing
    stage inner = load(fname, 2, 4);
    llama_token tok = 1;
    check(inner.ctx != nullptr && llama_decode(inner.ctx, llama_batch_get_one(&tok, 1)) != 0, "[2, 4) rejects a token batch");
    free_stage(inner);

    // a stage before the last refuses what it cannot do: a context without embeddings, an MTP context,
    // and a batch after its embeddings were turned off
    stage head = load(fname, 0, 2);
    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = 64;
    llama_context * no_embd = llama_init_from_model(head.model, cparams);
    check(no_embd == nullptr, "[0, 2) refuses a context without embeddings");
    cparams.embeddings   = true;
    cparams.pooling_type = LLAMA_POOLING_TYPE_NONE;
    cparams.ctx_type     = LLAMA_CONTEXT_TYPE_MTP;
    llama_context * mtp = llama_init_from_model(head.model, cparams);
    check(mtp == nullptr, "[0, 2) refuses an MTP context");
    llama_set_embeddings(head.ctx, false);
    check(llama_decode(head.ctx, llama_batch_get_one(&tok, 1)) != 0, "[0, 2) refuses a batch after llama_set_embeddings(false)");
    llama_free(no_embd);
    llama_free(mtp);
    free_stage(head);
    free_stage(full);

    std::filesystem::remove(fname);
    llama_backend_free();

    printf("%s\n", n_failed == 0 ? "PASS" : "FAIL");
    return n_failed == 0 ? 0 : 1;
}
