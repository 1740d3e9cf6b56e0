// Reproducer for range loading: a pipeline-parallel worker that owns the layers
// [layer_start, layer_end) loads only their tensors (token embeddings only when
// layer_start == 0, output norm/head only when layer_end == n_layer).
//
// Uses only the public API (llama.h, gguf.h, ggml-cpu.h). It writes its own tiny model, so it
// needs no network. Against the pristine pin it does not compile.

#include "ggml.h"
#include "ggml-cpu.h"
#include "gguf.h"
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <string>

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
    std::normal_distribution<float> dist(0.0f, 0.02f);
    auto add = [&](const std::string & name, int64_t ne0, int64_t ne1) {
        ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, ne0, ne1);
        ggml_set_name(t, name.c_str());
        for (int64_t i = 0; i < ggml_nelements(t); i++) {
            ((float *) t->data)[i] = dist(rng);
        }
        gguf_add_tensor(gctx, t);
    };

    const int64_t n_embd_gqa = n_embd/n_head*n_head_kv;
    add("token_embd.weight", n_embd, n_vocab);
    for (int64_t il = 0; il < n_layer; il++) {
        const std::string p = "blk." + std::to_string(il) + ".";
        add(p + "attn_norm.weight",   n_embd, 1);
        add(p + "attn_q.weight",      n_embd, n_embd);
        add(p + "attn_k.weight",      n_embd, n_embd_gqa);
        add(p + "attn_v.weight",      n_embd, n_embd_gqa);
        add(p + "attn_output.weight", n_embd, n_embd);
        add(p + "ffn_norm.weight",    n_embd, 1);
        add(p + "ffn_gate.weight",    n_embd, n_ff);
        add(p + "ffn_down.weight",    n_ff,   n_embd);
        add(p + "ffn_up.weight",      n_embd, n_ff);
    }
    add("output_norm.weight", n_embd, 1);
    add("output.weight",      n_embd, n_vocab);

    if (!gguf_write_to_file(gctx, fname.c_str(), false)) {
        fprintf(stderr, "failed to write %s\n", fname.c_str());
        exit(1);
    }
    ggml_free(ctx);
    gguf_free(gctx);
}

// what the loader reports through the log: created tensors (each one placed by the catch-all
// buffer type override below), model buffer sizes, errors
struct load_log {
    std::set<std::string> tensors;
    double buffer_mib = 0.0;
    std::string errors;
};

static void log_cb(ggml_log_level level, const char * text, void * user_data) {
    auto * log = (load_log *) user_data;
    const std::string s = text;
    size_t pos = s.find(" buffer type overridden to ");
    if (s.rfind("tensor ", 0) == 0 && pos != std::string::npos) {
        log->tensors.insert(s.substr(7, s.find(' ', 7) - 7));
    }
    pos = s.find("model buffer size =");
    if (pos != std::string::npos) {
        log->buffer_mib += atof(s.c_str() + pos + 19);
    }
    if (level == GGML_LOG_LEVEL_ERROR) {
        log->errors += s;
    }
}

static llama_model * load(const std::string & fname, int32_t layer_start, int32_t layer_end, load_log & log) {
    llama_log_set(log_cb, &log);
    llama_model_params mparams = llama_model_default_params();
    mparams.load_mode   = LLAMA_LOAD_MODE_NONE; // no mmap: the buffer then holds exactly the loaded tensors
    // every created tensor goes to the CPU through this override, which logs its name
    static const llama_model_tensor_buft_override cpu_for_all[] = { { ".*", ggml_backend_cpu_buffer_type() }, { nullptr, nullptr } };
    mparams.tensor_buft_overrides = cpu_for_all;
    mparams.layer_start = layer_start;
    mparams.layer_end   = layer_end;
    llama_model * model = llama_model_load_from_file(fname.c_str(), mparams);
    llama_log_set(nullptr, nullptr);
    return model;
}

static std::set<std::string> expected(int32_t start, int32_t end) {
    std::set<std::string> ret;
    for (int32_t il = start; il < end; il++) {
        for (const char * n : { "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_down", "ffn_up" }) {
            ret.insert("blk." + std::to_string(il) + "." + n + ".weight");
        }
    }
    if (start == 0) {
        ret.insert("token_embd.weight");
    }
    if (end == n_layer) {
        ret.insert("output_norm.weight");
        ret.insert("output.weight");
    }
    return ret;
}

int main() {
    llama_backend_init();
    const std::string fname = (std::filesystem::temp_directory_path() / "range-loading-reproducer.gguf").string();
    write_model(fname);

    load_log full_log;
    llama_model * full = load(fname, 0, -1, full_log);
    check(full != nullptr && full_log.tensors == expected(0, n_layer), "default params load all 39 tensors");
    printf("      full model: %zu tensors, %.2f MiB\n", full_log.tensors.size(), full_log.buffer_mib);
    llama_model_free(full);

    load_log explicit_log;
    llama_model * explicit_full = load(fname, 0, n_layer, explicit_log);
    check(explicit_full != nullptr && explicit_log.tensors == full_log.tensors && explicit_log.buffer_mib == full_log.buffer_mib,
          "the explicit range [0, n_layer) loads as the default");
    llama_model_free(explicit_full);

    const int32_t ranges[][2] = { {0, 2}, {1, 3}, {2, 4} };
    for (const auto & r : ranges) {
        const std::string what = "[" + std::to_string(r[0]) + ", " + std::to_string(r[1]) + ")";
        load_log log;
        llama_model * model = load(fname, r[0], r[1], log);
        check(model != nullptr, what + " loads");
        check(log.tensors == expected(r[0], r[1]), what + " creates only the owned tensors (" + std::to_string(log.tensors.size()) + ")");
        check(log.buffer_mib > 0.0 && log.buffer_mib < full_log.buffer_mib, what + " model buffer " + std::to_string(log.buffer_mib) + " MiB < full");
        llama_model_free(model);
    }

    const int32_t invalid[][2] = { {2, 2}, {3, 1}, {0, 5}, {-1, 2} };
    for (const auto & r : invalid) {
        const std::string what = "[" + std::to_string(r[0]) + ", " + std::to_string(r[1]) + ")";
        load_log log;
        llama_model * model = load(fname, r[0], r[1], log);
        check(model == nullptr && log.errors.find("invalid layer range") != std::string::npos, what + " is rejected with an error");
        llama_model_free(model);
    }

    std::filesystem::remove(fname);
    llama_backend_free();

    printf("%s\n", n_failed == 0 ? "PASS" : "FAIL");
    return n_failed == 0 ? 0 : 1;
}
