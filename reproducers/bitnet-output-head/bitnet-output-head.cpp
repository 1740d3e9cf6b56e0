// Reproducer for the BitNet output head: the model loads its head as model.output, a tensor of its own with the values of the token embeddings, and still decodes.
// The model comes from upstream's test-llama-archs (compiled in from the tree, its main renamed), so no model file or network is needed.

#define main test_llama_archs_main
#include "test-llama-archs.cpp"
#undef main

#include "llama-model.h" // model.output and model.tok_embd

static std::vector<uint8_t> tensor_data(const ggml_tensor * t) {
    std::vector<uint8_t> data(ggml_nbytes(t));
    ggml_backend_tensor_get(t, data.data(), 0, data.size());
    return data;
}

int main() {
    llama_backend_init();
    gguf_context_ptr gguf_ctx = get_gguf_ctx(LLM_ARCH_BITNET, false);
    llama_model_params mparams = llama_model_default_params();
    mparams.progress_callback = silent_model_load_progress;
    size_t seed = 42;
    llama_model_ptr model(llama_model_init_from_user(gguf_ctx.get(), set_tensor_data, &seed, mparams));
    if (!model) {
        printf("FAIL bitnet: the model cannot be made\n");
        return 1;
    }

    int ret = 0;
    const llama_model & m = *model;
    if (m.output == nullptr) {
        printf("FAIL bitnet: model.output is null, the head reads model.tok_embd\n");
        ret = 1;
    } else if (m.output == m.tok_embd || tensor_data(m.output) != tensor_data(m.tok_embd)) {
        printf("FAIL bitnet: model.output is not a copy of its own of the token embeddings\n");
        ret = 1;
    } else {
        printf("ok   bitnet: model.output is a tensor of its own with the values of the token embeddings\n");
    }

    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = 64;
    llama_context_ptr ctx(llama_init_from_model(model.get(), cparams));
    const uint32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model.get()));
    const std::vector<float> logits = ctx ? get_logits(model.get(), ctx.get(), get_tokens(8, n_vocab, seed)) : std::vector<float>();
    if (logits.size() != 8*(size_t) n_vocab) {
        printf("FAIL bitnet: no logits for the prompt\n");
        ret = 1;
    } else {
        printf("ok   bitnet: decodes a prompt of 8 tokens\n");
    }
    llama_backend_free();
    return ret;
}
