// Reference CPU kernels for vllm_records.ops.yaml, written against its record
// API, plus ops in the namespace vllm_ref_cpp_api that call the generated C++
// call API (vllm_ref::fused_add_rms_norm(input, residual, RmsNorm{...}) ...) so
// that kernel_libraries_test.py tests it from Python. Semantics follow the
// documented behaviour of vLLM's ops (github.com/vllm-project/vllm); the code
// is our own, plain ATen, for small test sizes.
#include <cmath>
#include <vector>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "vllm_records.ops.h"

namespace vllm_ref {

void kernels::fused_add_rms_norm(
    const at::Tensor& input,
    const at::Tensor& residual,
    const RmsNorm& norm) {
  TORCH_CHECK(input.sizes() == residual.sizes(), "input and residual differ in shape");
  residual.add_(input);
  const at::Tensor sum = residual.to(at::kFloat);
  const at::Tensor inv_rms = at::rsqrt(sum.pow(2).mean(-1, /*keepdim=*/true) + norm.eps);
  input.copy_((sum * inv_rms).to(input.scalar_type()) * norm.weight);
}

namespace {

/// Rotates the first `rot_dim` values of each head of `x` ([tokens, heads *
/// head_size]) in place; `cos` and `sin` are [tokens, 1, rot_dim / 2].
void rotate(
    const at::Tensor& x,
    int64_t head_size,
    int64_t rot_dim,
    const at::Tensor& cos,
    const at::Tensor& sin,
    bool neox) {
  at::Tensor heads = x.view({x.size(0), -1, head_size}).narrow(-1, 0, rot_dim);
  const int64_t half = rot_dim / 2;
  at::Tensor x1 = neox ? heads.narrow(-1, 0, half) : heads.slice(-1, 0, rot_dim, 2);
  at::Tensor x2 = neox ? heads.narrow(-1, half, half) : heads.slice(-1, 1, rot_dim, 2);
  const at::Tensor o1 = x1 * cos - x2 * sin;
  const at::Tensor o2 = x2 * cos + x1 * sin;
  x1.copy_(o1);
  x2.copy_(o2);
}

}  // namespace

void kernels::rotary_embedding(
    const at::Tensor& positions,
    const at::Tensor& query,
    const c10::optional<at::Tensor>& key,
    const Rope& rope) {
  const int64_t rot_dim = rope.cos_sin_cache.size(1);
  TORCH_CHECK(rot_dim % 2 == 0 && rot_dim <= rope.head_size, "bad cos_sin_cache width");
  const at::Tensor rows = rope.cos_sin_cache.index_select(0, positions.flatten());
  const at::Tensor cos = rows.narrow(1, 0, rot_dim / 2).unsqueeze(1);
  const at::Tensor sin = rows.narrow(1, rot_dim / 2, rot_dim / 2).unsqueeze(1);
  const at::Tensor q = query.view({positions.numel(), -1});
  rotate(q, rope.head_size, rot_dim, cos, sin, rope.neox_style);
  if (key)
    rotate(key->view({positions.numel(), -1}), rope.head_size, rot_dim, cos, sin, rope.neox_style);
}

void kernels::paged_attention_v1(
    const at::Tensor& out,
    const at::Tensor& query,
    const KvCache& cache,
    const Heads& heads,
    const Blocks& blocks,
    const c10::optional<at::Tensor>& alibi_slopes,
    const KvQuant& quant,
    int64_t /*tp_rank*/,
    const BlockSparse& sparse) {
  TORCH_CHECK(
      quant.dtype == KvCacheDtype::auto_,
      "the reference kernel reads only an unquantized cache (kv_cache_dtype \"auto\")");
  TORCH_CHECK(sparse.local_blocks == 0, "the reference kernel has no block-sparse attention");
  const int64_t num_seqs = query.size(0), num_heads = query.size(1), head_size = query.size(2);
  const int64_t group = num_heads / heads.num_kv_heads;
  const at::Tensor tables = blocks.tables.to(at::kLong), lens = blocks.seq_lens.to(at::kLong);
  for (int64_t s = 0; s < num_seqs; ++s) {
    const int64_t len = lens[s].item<int64_t>();
    TORCH_CHECK(len <= blocks.max_seq_len, "a sequence is longer than max_seq_len");
    std::vector<at::Tensor> keys, values;  // per token: [num_kv_heads, head_size]
    for (int64_t t = 0; t < len; ++t) {
      const int64_t block = tables[s][t / blocks.size].item<int64_t>(), slot = t % blocks.size;
      // key_cache[block]: [num_kv_heads, head_size / x, block_size, x]
      keys.push_back(cache.key[block].select(2, slot).reshape({heads.num_kv_heads, head_size}));
      // value_cache[block]: [num_kv_heads, head_size, block_size]
      values.push_back(cache.value[block].select(2, slot));
    }
    const at::Tensor k = at::stack(keys, 1).repeat_interleave(group, 0);  // [heads, len, hs]
    const at::Tensor v = at::stack(values, 1).repeat_interleave(group, 0);
    at::Tensor scores = at::matmul(query[s].unsqueeze(1), k.transpose(1, 2)).squeeze(1) *
                        heads.scale;
    if (alibi_slopes) {
      const at::Tensor distance = at::arange(len, scores.options()) - (len - 1);
      scores = scores + alibi_slopes->unsqueeze(1).to(scores.scalar_type()) * distance;
    }
    out[s].copy_(at::matmul(at::softmax(scores, -1).unsqueeze(1), v).squeeze(1));
  }
}

}  // namespace vllm_ref

// The C++ call API of the record ops, reached from Python: each builds the
// records from flat arguments and calls vllm_ref::<op>(...) (which flattens
// them again and goes through the dispatcher).
TORCH_LIBRARY(vllm_ref_cpp_api, m) {
  m.def(
      "fused_add_rms_norm(Tensor(a!) input, Tensor(b!) residual, Tensor weight, float eps) -> ()",
      [](const at::Tensor& input,
         const at::Tensor& residual,
         const at::Tensor& weight,
         double eps) {
        vllm_ref::fused_add_rms_norm(input, residual, vllm_ref::RmsNorm{weight, eps});
      });
  m.def(
      "rotary_embedding(Tensor positions, Tensor(a!) query, Tensor(b!)? key, int head_size, "
      "Tensor cos_sin_cache, bool neox) -> ()",
      [](const at::Tensor& positions,
         const at::Tensor& query,
         const c10::optional<at::Tensor>& key,
         int64_t head_size,
         const at::Tensor& cos_sin_cache,
         bool neox) {
        vllm_ref::Rope rope;
        rope.head_size = head_size;
        rope.cos_sin_cache = cos_sin_cache;
        rope.neox_style = neox;
        vllm_ref::rotary_embedding(positions, query, key, rope);
      });
  m.def(
      "paged_attention_v1(Tensor(a!) out, Tensor query, Tensor key_cache, Tensor value_cache, "
      "int num_kv_heads, float scale, Tensor block_tables, Tensor seq_lens, int block_size, "
      "int max_seq_len, Tensor? alibi_slopes, str kv_cache_dtype) -> ()",
      [](const at::Tensor& out,
         const at::Tensor& query,
         const at::Tensor& key_cache,
         const at::Tensor& value_cache,
         int64_t num_kv_heads,
         double scale,
         const at::Tensor& block_tables,
         const at::Tensor& seq_lens,
         int64_t block_size,
         int64_t max_seq_len,
         const c10::optional<at::Tensor>& alibi_slopes,
         c10::string_view kv_cache_dtype) {
        const at::Tensor one = at::ones({}, query.options().dtype(at::kFloat));
        const auto dtype = structop::try_parse_enum<vllm_ref::KvCacheDtype>(kv_cache_dtype);
        TORCH_CHECK(dtype, "unknown kv_cache_dtype \"", kv_cache_dtype, "\"");
        vllm_ref::paged_attention_v1(
            out,
            query,
            vllm_ref::KvCache{key_cache, value_cache},
            vllm_ref::Heads{num_kv_heads, scale},
            vllm_ref::Blocks{block_tables, seq_lens, block_size, max_seq_len},
            alibi_slopes,
            vllm_ref::KvQuant{*dtype, one, one},
            /*tp_rank=*/0,
            vllm_ref::BlockSparse{0, 0, 64, 0});
      });
}
