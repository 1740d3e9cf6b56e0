#include "tiny_model.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "engine.hpp"

#include "ggml.h"
#include "gguf.h"
#include "worker/prng.hpp"

namespace worker::stage {
namespace {

struct GgufFree {
  void operator()(gguf_context* c) const { gguf_free(c); }
};
struct GgmlFree {
  void operator()(ggml_context* c) const { ggml_free(c); }
};

}  // namespace

std::string write_tiny_model(const std::string& path, const TinyModelSpec& s) {
  if (s.n_head == 0 || s.n_head_kv == 0 || s.n_embd % s.n_head != 0 || s.n_head % s.n_head_kv != 0) {
    return "tiny model: n_embd must divide into n_head heads, n_head into n_head_kv groups";
  }
  std::unique_ptr<gguf_context, GgufFree> gguf(gguf_init_empty());
  gguf_context* g = gguf.get();
  gguf_set_val_str(g, "general.architecture", "llama");
  gguf_set_val_str(g, "general.name", "worker-tiny-llama");
  gguf_set_val_u32(g, "llama.vocab_size", s.n_vocab);
  gguf_set_val_u32(g, "llama.context_length", s.n_ctx);
  gguf_set_val_u32(g, "llama.embedding_length", s.n_embd);
  gguf_set_val_u32(g, "llama.block_count", s.n_layer);
  gguf_set_val_u32(g, "llama.feed_forward_length", s.n_ff);
  gguf_set_val_u32(g, "llama.attention.head_count", s.n_head);
  gguf_set_val_u32(g, "llama.attention.head_count_kv", s.n_head_kv);
  gguf_set_val_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
  gguf_set_val_f32(g, "llama.rope.freq_base", 10000.0f);
  // No tokenizer: token ids go in and out as they are.
  gguf_set_val_str(g, "tokenizer.ggml.model", "no_vocab");

  const std::int64_t embd = s.n_embd;
  const std::int64_t kv = static_cast<std::int64_t>(s.n_embd / s.n_head) * s.n_head_kv;
  struct Spec {
    std::string name;
    std::int64_t ne0, ne1;  // ne1 0: a vector
    bool norm;
  };
  std::vector<Spec> tensors = {{"token_embd.weight", embd, s.n_vocab, false}};
  for (std::uint32_t il = 0; il < s.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    tensors.push_back({b + "attn_norm.weight", embd, 0, true});
    tensors.push_back({b + "attn_q.weight", embd, embd, false});
    tensors.push_back({b + "attn_k.weight", embd, kv, false});
    tensors.push_back({b + "attn_v.weight", embd, kv, false});
    tensors.push_back({b + "attn_output.weight", embd, embd, false});
    tensors.push_back({b + "ffn_norm.weight", embd, 0, true});
    tensors.push_back({b + "ffn_gate.weight", embd, s.n_ff, false});
    tensors.push_back({b + "ffn_down.weight", s.n_ff, embd, false});
    tensors.push_back({b + "ffn_up.weight", embd, s.n_ff, false});
  }
  tensors.push_back({"output_norm.weight", embd, 0, true});
  tensors.push_back({"output.weight", embd, s.n_vocab, false});

  const ggml_type matrix_type = s.type == TinyModelSpec::Type::kF16    ? GGML_TYPE_F16
                                : s.type == TinyModelSpec::Type::kQ8_0 ? GGML_TYPE_Q8_0
                                                                       : GGML_TYPE_F32;
  if (ggml_blck_size(matrix_type) > 1 &&
      (embd % ggml_blck_size(matrix_type) != 0 || s.n_ff % ggml_blck_size(matrix_type) != 0)) {
    return "tiny model: n_embd and n_ff must be multiples of " +
           std::to_string(ggml_blck_size(matrix_type)) + " for " + ggml_type_name(matrix_type);
  }
  std::size_t bytes = 0;
  for (const Spec& t : tensors) {
    const ggml_type type = t.ne1 == 0 ? GGML_TYPE_F32 : matrix_type;
    bytes += ggml_tensor_overhead() + 64 + ggml_row_size(type, t.ne0) * static_cast<std::size_t>(t.ne1 == 0 ? 1 : t.ne1);
  }
  ggml_init_params params{bytes, nullptr, false};
  std::unique_ptr<ggml_context, GgmlFree> ctx(ggml_init(params));
  if (!ctx) return "tiny model: cannot allocate " + std::to_string(bytes) + " bytes";
  SplitMix64 rng(s.seed);
  // Matrices scale with 1/sqrt(n_embd): 0.0625 at the tiny model's 128.
  const float matrix_scale = 0.0625f * std::sqrt(128.0f / static_cast<float>(s.n_embd));
  std::vector<float> values;
  for (const Spec& t : tensors) {
    const ggml_type type = t.ne1 == 0 ? GGML_TYPE_F32 : matrix_type;
    ggml_tensor* x = t.ne1 == 0 ? ggml_new_tensor_1d(ctx.get(), type, t.ne0)
                                : ggml_new_tensor_2d(ctx.get(), type, t.ne0, t.ne1);
    ggml_set_name(x, t.name.c_str());
    const std::int64_t n = ggml_nelements(x);
    values.resize(static_cast<std::size_t>(n));
    // Norms start at 1 (with a little noise), matrices small enough that the
    // activations neither vanish nor blow up through the layers.
    const float scale = t.norm ? 0.125f : matrix_scale;
    for (std::int64_t i = 0; i < n; ++i) {
      values[static_cast<std::size_t>(i)] = (t.norm ? 1.0f : 0.0f) + scale * rng.next_signed_unit();
    }
    if (type == GGML_TYPE_F32) {
      std::memcpy(x->data, values.data(), static_cast<std::size_t>(n) * sizeof(float));
    } else if (type == GGML_TYPE_F16) {
      ggml_fp32_to_fp16_row(values.data(), static_cast<ggml_fp16_t*>(x->data), n);
    } else {
      ggml_quantize_chunk(type, values.data(), x->data, 0, t.ne1, t.ne0, nullptr);
    }
    gguf_add_tensor(g, x);
  }
  if (!gguf_write_to_file(g, path.c_str(), false)) {
    return "tiny model: cannot write " + path;
  }
  return {};
}

std::string read_gguf_summary(const std::string& path, GgufSummary& out) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return "model " + path + " is not a file";
  init_llama();  // gguf's own complaints go to our log callback
  gguf_init_params params{true, nullptr};
  std::unique_ptr<gguf_context, GgufFree> g(gguf_init_from_file(path.c_str(), params));
  if (!g) return "cannot read " + path + " as GGUF";
  const std::int64_t arch = gguf_find_key(g.get(), "general.architecture");
  if (arch < 0 || gguf_get_kv_type(g.get(), arch) != GGUF_TYPE_STRING) {
    return path + " has no general.architecture";
  }
  out.architecture = gguf_get_val_str(g.get(), arch);
  auto u32 = [&](const std::string& key, std::uint32_t& v) {
    const std::int64_t id = gguf_find_key(g.get(), (out.architecture + "." + key).c_str());
    if (id < 0 || gguf_get_kv_type(g.get(), id) != GGUF_TYPE_UINT32) return false;
    v = gguf_get_val_u32(g.get(), id);
    return true;
  };
  if (!u32("block_count", out.n_layer)) return path + " has no block_count";
  if (!u32("vocab_size", out.n_vocab)) {
    const std::int64_t id = gguf_find_key(g.get(), "tokenizer.ggml.tokens");
    if (id < 0) return path + " names no vocabulary size";
    out.n_vocab = static_cast<std::uint32_t>(gguf_get_arr_n(g.get(), id));
  }
  out.weight_bytes = 0;
  for (std::int64_t i = 0; i < gguf_get_n_tensors(g.get()); ++i) {
    out.weight_bytes += gguf_get_tensor_size(g.get(), i);
  }
  return {};
}

}  // namespace worker::stage
