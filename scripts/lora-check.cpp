// What upstream llama.cpp itself computes with a LoRA adapter, built against an unpatched tree (no
// layer range anywhere). The stack's boundary test (-b) loads a rank-2 adapter of every layer's
// attention query weight on the full model and on each stage; on Mesa's software Vulkan device
// (lavapipe) the full model alone, with every layer offloaded, corrupted the heap there.
//
//   lora-check MODEL ADAPTER   writes ADAPTER: a rank-2 adapter of every attn_q weight of MODEL,
//                              alpha 512, with seeded values; then decodes two sequences of 5 and
//                              4 tokens in one batch, ubatches of 5, in one context: without the
//                              adapter, with it and without it again. Exit 1 unless the adapter
//                              changes the logits and its removal restores them bit for bit.
// The model's layers go to the first GPU-type device llama.cpp finds (n_gpu_layers -1), or stay
// on the CPU where it finds none.
#include "ggml.h"
#include "gguf.h"
#include "llama.h"
#include "upstream-check.h"

#include <cstdint>
#include <cstring>
#include <string>

// values in [-0.5, 0.5) from a 64-bit LCG: the same adapter for the same model on every machine
static float next_value(uint64_t & state) {
    state = state*6364136223846793005ull + 1442695040888963407ull;
    return (float) (state >> 40)/(float) (1ull << 24) - 0.5f;
}

// writes the adapter of every attn_q weight of the model file at model_path to path; false if it has none
static bool write_adapter(const char * model_path, const char * path) {
    ggml_context * meta = nullptr;
    gguf_context * model = gguf_init_from_file(model_path, { true, &meta });
    if (model == nullptr) {
        return false;
    }
    gguf_context * adapter = gguf_init_empty();
    gguf_set_val_str(adapter, "general.type", "adapter");
    gguf_set_val_str(adapter, "general.architecture", gguf_get_val_str(model, gguf_find_key(model, "general.architecture")));
    gguf_set_val_str(adapter, "adapter.type", "lora");
    gguf_set_val_f32(adapter, "adapter.lora.alpha", 512.0f);
    ggml_context * ctx = ggml_init({ 64*1024*1024, nullptr, false });
    uint64_t state = 42;
    int n_pairs = 0;
    for (int il = 0; ; il++) {
        const std::string name = "blk." + std::to_string(il) + ".attn_q.weight";
        if (gguf_find_tensor(model, name.c_str()) < 0) {
            if (gguf_find_tensor(model, ("blk." + std::to_string(il) + ".attn_norm.weight").c_str()) < 0) {
                break; // past the last layer
            }
            continue; // a layer without attn_q (e.g. a recurrent one)
        }
        const ggml_tensor * w = ggml_get_tensor(meta, name.c_str());
        ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, w->ne[0], 2);
        ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 2, w->ne[1]);
        ggml_set_name(a, (name + ".lora_a").c_str());
        ggml_set_name(b, (name + ".lora_b").c_str());
        for (ggml_tensor * t : { a, b }) {
            float * data = (float *) t->data;
            for (int64_t i = 0; i < ggml_nelements(t); i++) {
                data[i] = next_value(state);
            }
            gguf_add_tensor(adapter, t);
        }
        n_pairs++;
    }
    const bool ok = n_pairs > 0 && gguf_write_to_file(adapter, path, false);
    ggml_free(ctx);
    gguf_free(adapter);
    gguf_free(model);
    ggml_free(meta);
    return ok;
}

// the logits of the 9 tokens of the batch, after the memory is cleared
static std::vector<float> batch_logits(llama_context * ctx) {
    llama_memory_clear(llama_get_memory(ctx), true);
    return two_sequence_logits(ctx);
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL ADAPTER\n", argv[0]);
        return 2;
    }
    if (!write_adapter(argv[1], argv[2])) {
        fprintf(stderr, "no adapter written: the model has no attn_q weight\n");
        return 2;
    }
    llama_model * model = load_model(argv[1]);
    llama_adapter_lora * adapter = llama_adapter_lora_init(model, argv[2]);
    if (adapter == nullptr) {
        fprintf(stderr, "the adapter does not load\n");
        return 2;
    }
    llama_context * ctx = new_context(model);
    float scale = 1.0f;
    const std::vector<float> plain = batch_logits(ctx);
    printf("without the adapter: decoded\n");
    fflush(stdout);
    llama_set_adapters_lora(ctx, &adapter, 1, &scale);
    const std::vector<float> with = batch_logits(ctx);
    printf("with the adapter: decoded\n");
    fflush(stdout);
    llama_set_adapters_lora(ctx, nullptr, 0, nullptr);
    const std::vector<float> again = batch_logits(ctx);
    const bool changes  = memcmp(plain.data(), with.data(), plain.size()*sizeof(float)) != 0;
    const bool restores = memcmp(plain.data(), again.data(), plain.size()*sizeof(float)) == 0;
    printf("the adapter %s the logits; without it again they are %s\n", changes ? "changes" : "does NOT change",
        restores ? "those before it, bit for bit" : "NOT those before it");
    llama_free(ctx);
    llama_model_free(model);
    return changes && restores ? 0 : 1;
}
