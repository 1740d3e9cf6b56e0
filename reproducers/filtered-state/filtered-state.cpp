// Reproducer for filtered state: a stage that owns the layers [layer_start, layer_end) keeps and
// saves the state of its own layers only, a new context of the same range continues from that state
// as if it had never stopped (another process or host taking the stage over), and a state saved by
// another layer range is rejected instead of loading silently.
//
// Uses only the public API (llama.h, gguf.h). It writes its own tiny model, so it needs no
// network. Against the pristine pin it does not compile; against range loading and boundary I/O
// alone it runs and fails.

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

// decodes n_tokens of tokens from n_past through the chain; returns the logits of the last stage
static std::vector<float> step(const std::vector<stage> & stages, const std::vector<llama_token> & tokens, int32_t n_past, int32_t n_tokens) {
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
    std::vector<float> ret;
    for (int32_t j = 0; j < n_tokens; j++) {
        const float * logits = llama_get_logits_ith(stages.back().ctx, j);
        ret.insert(ret.end(), logits, logits + n_vocab);
    }
    return ret;
}

// an 8-token prompt, then after_prompt(stages), then 4 greedy single-token steps; returns all logits
template <typename F>
static std::vector<float> run(std::vector<stage> & stages, F after_prompt) {
    std::vector<llama_token> tokens = { 1, 17, 42, 5, 99, 3, 64, 127 };
    std::vector<float> ret;
    int32_t n_past = 0;
    for (int s = 0; s <= 4; s++) {
        const int32_t n_tokens = s == 0 ? (int32_t) tokens.size() : 1;
        const std::vector<float> logits = step(stages, tokens, n_past, n_tokens);
        if (logits.empty()) {
            return {};
        }
        ret.insert(ret.end(), logits.begin(), logits.end());
        n_past += n_tokens;
        const float * last = logits.data() + (size_t) (n_tokens - 1)*n_vocab;
        tokens.push_back(std::max_element(last, last + n_vocab) - last);
        if (s == 0) {
            after_prompt(stages);
        }
    }
    return ret;
}

static void free_stage(stage & s) {
    llama_free(s.ctx);
    llama_model_free(s.model);
    s = {};
}

static std::vector<uint8_t> save(llama_context * ctx) {
    std::vector<uint8_t> ret(llama_state_seq_get_size(ctx, 0));
    ret.resize(llama_state_seq_get_data(ctx, ret.data(), ret.size(), 0));
    return ret;
}

// FNV-1a, to compare the full model's state across builds in the logs
static uint64_t fnv1a(const std::vector<uint8_t> & data) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint8_t b : data) {
        h = (h ^ b)*0x100000001b3ULL;
    }
    return h;
}

static std::string errors; // errors logged by llama.cpp

int main() {
    llama_log_set([](ggml_log_level level, const char * text, void * /*user_data*/) {
        if (level == GGML_LOG_LEVEL_ERROR) {
            errors += text;
        }
    }, nullptr);
    llama_backend_init();
    const std::string fname = (std::filesystem::temp_directory_path() / "filtered-state-reproducer.gguf").string();
    const std::string sname = fname + ".state";
    write_model(fname);

    // the full model, uninterrupted, and its state after the prompt
    std::vector<uint8_t> full_state;
    std::vector<stage> full = { load(fname, 0, -1) };
    check(full[0].ctx != nullptr, "the full model loads");
    const std::vector<float> expected = run(full, [&](std::vector<stage> & s) { full_state = save(s[0].ctx); });
    check(expected.size() == (8 + 4)*n_vocab, "the full model decodes 8 tokens and 4 steps");
    printf("the full model's sequence state after the prompt: %zu bytes, fnv1a64 %016llx\n",
        full_state.size(), (unsigned long long) fnv1a(full_state));
    free_stage(full[0]);

    // the stages [0, 2) + [2, 4): each saves its state after the prompt to a file, and a new context of its range
    // (another process) loads it and continues
    std::vector<stage> stages = { load(fname, 0, 2), load(fname, 2, 4) };
    check(stages[0].ctx != nullptr && stages[1].ctx != nullptr, "[0, 2) + [2, 4) load and run");
    std::vector<std::vector<uint8_t>> states(2);
    const std::vector<float> got = run(stages, [&](std::vector<stage> & s) {
        for (size_t i = 0; i < s.size(); i++) {
            states[i] = save(s[i].ctx);
            const int32_t range[2][2] = { { 0, 2 }, { 2, 4 } };
            const std::string what = "[" + std::to_string(range[i][0]) + ", " + std::to_string(range[i][1]) + ")";
            printf("the state of %s: %zu bytes\n", what.c_str(), states[i].size());
            check(!states[i].empty() && 4*states[i].size() < 3*full_state.size(),
                what + " (2 of 4 layers) saves less than 3/4 of the full model's state");
            llama_token no_tokens[1];
            check(llama_state_seq_save_file(s[i].ctx, sname.c_str(), 0, no_tokens, 0) != 0, what + " saves its state to a file");
            free_stage(s[i]);
            s[i] = load(fname, range[i][0], range[i][1]);
            size_t n_token_count = 0;
            check(s[i].ctx != nullptr && llama_state_seq_load_file(s[i].ctx, sname.c_str(), 0, no_tokens, 1, &n_token_count) != 0,
                "a new context of " + what + " loads the state file");
        }
    });
    check(got.size() == expected.size() && memcmp(got.data(), expected.data(), got.size()*sizeof(float)) == 0,
        "the stages continued from their saved states give the logits of the full model, bit for bit");
    for (auto & s : stages) {
        free_stage(s);
    }

    // a state is restored into the range that saved it only
    auto rejects = [&](int32_t a, int32_t b, const std::vector<uint8_t> & state, const std::string & what) {
        stage s = load(fname, a, b);
        errors.clear();
        const size_t n_read = s.ctx ? llama_state_seq_set_data(s.ctx, state.data(), state.size(), 0) : 1;
        check(n_read == 0 && errors.find("layers") != std::string::npos, what + " is rejected, with the reason: " + errors.substr(0, errors.find('\n')));
        free_stage(s);
    };
    rejects(2, 4, states[0], "the state of [0, 2) restored into [2, 4)");
    rejects(0, -1, states[0], "the state of [0, 2) restored into the full model");
    rejects(0, 2, full_state, "the full model's state restored into [0, 2)");

    // the full model's state restores into the full model
    stage again = load(fname, 0, -1);
    check(llama_state_seq_set_data(again.ctx, full_state.data(), full_state.size(), 0) == full_state.size(),
        "the full model's state restores into the full model");
    free_stage(again);

    std::filesystem::remove(sname);
    std::filesystem::remove(fname);
    llama_backend_free();

    printf("%s\n", n_failed == 0 ? "PASS" : "FAIL");
    return n_failed == 0 ? 0 : 1;
}
