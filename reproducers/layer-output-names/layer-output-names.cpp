// Reproducer for the layer output names: every layer of Nemotron-H and PLaMo 2 names its output l_out, as the other builders do.
// The models come from upstream's test-llama-archs (compiled in from the tree, its main renamed), so no model file or network is needed.

#define main test_llama_archs_main
#include "test-llama-archs.cpp"
#undef main

#include <set>
#include <string>

// records the name of every node the scheduler computes; no data is asked for
static bool collect_names(struct ggml_tensor * t, bool ask, void * user_data) {
    if (ask) {
        static_cast<std::set<std::string> *>(user_data)->insert(ggml_get_name(t));
    }
    return !ask;
}

static bool check_arch(const llm_arch arch) {
    gguf_context_ptr gguf_ctx = get_gguf_ctx(arch, false);
    llama_model_params mparams = llama_model_default_params();
    mparams.progress_callback = silent_model_load_progress;
    size_t seed = 42;
    llama_model_ptr model(llama_model_init_from_user(gguf_ctx.get(), set_tensor_data, &seed, mparams));
    if (!model) {
        printf("FAIL %s: the model cannot be made\n", llm_arch_name(arch));
        return false;
    }

    std::set<std::string> names;
    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx             = 64;
    cparams.n_threads         = 2;
    cparams.n_threads_batch   = 2;
    cparams.cb_eval           = collect_names;
    cparams.cb_eval_user_data = &names;
    llama_context_ptr ctx(llama_init_from_model(model.get(), cparams));
    if (!ctx) {
        printf("FAIL %s: no context\n", llm_arch_name(arch));
        return false;
    }
    const uint32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model.get()));
    get_logits(model.get(), ctx.get(), get_tokens(8, n_vocab, seed));

    bool ok = true;
    const int32_t n_layer = llama_model_n_layer(model.get());
    for (int32_t il = 0; il < n_layer; il++) {
        const std::string name = "l_out-" + std::to_string(il);
        if (names.count(name) == 0) {
            printf("FAIL %s: layer %d has no node named %s\n", llm_arch_name(arch), il, name.c_str());
            ok = false;
        }
    }
    if (ok) {
        printf("ok   %s: each of its %d layers names its output l_out\n", llm_arch_name(arch), n_layer);
    }
    return ok;
}

int main() {
    llama_backend_init();
    llama_log_set([](ggml_log_level level, const char * text, void *) {
        if (level == GGML_LOG_LEVEL_ERROR) {
            fputs(text, stderr);
        }
    }, nullptr);
    bool ok = true;
    for (const llm_arch arch : { LLM_ARCH_NEMOTRON_H, LLM_ARCH_PLAMO2 }) {
        ok = check_arch(arch) && ok;
    }
    llama_backend_free();
    return ok ? 0 : 1;
}
