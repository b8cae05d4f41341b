#!/usr/bin/env python3
"""Adopting records without breaking a shipped flat op (issue 30 item 2).

kernel_libraries/vllm_flat.ops.yaml declares three ops of vLLM's kernel
library as that library ships them (flat); vllm_records.ops.yaml re-declares
them with records whose leaves pin the flat names. This test checks:
- `structopc --compat` from the flat IDL to the record IDL exits 0 and reports
  only compatible changes (the adoption of each record parameter);
- the schemas the record library registers are exactly the flat IDL's
  lowered schemas (from `structopc --emit json`);
- the generated Python record API, the generated C++ call API (through the
  ops of vllm_ref_cpp_api, kernel_libraries/vllm_kernels.cpp) and flat
  torch.ops calls with vLLM's argument names all give what an independent
  torch reference gives, on CPU.

usage: kernel_libraries_test.py STRUCTOPC LIBRARY IDL_DIR
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import torch

STRUCTOPC, LIBRARY, IDL_DIR = sys.argv[1:4]
del sys.argv[1:4]

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
import unittest_main  # noqa: E402

import vllm_records_ops as v  # noqa: E402  (generated; PYTHONPATH from Meson)

v.load_library(LIBRARY)
flat = torch.ops.vllm_ref
cpp_api = torch.ops.vllm_ref_cpp_api
OLD = os.path.join(IDL_DIR, "vllm_flat.ops.yaml")
NEW = os.path.join(IDL_DIR, "vllm_records.ops.yaml")


def rms_norm_ref(x, residual, weight, eps):
    s = x + residual
    return s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * weight, s


def rope_ref(positions, x, head_size, cache, neox):
    """x: [tokens, heads * head_size]; rotates each head's first rot_dim values."""
    rot = cache.shape[1]
    cos, sin = cache[positions].chunk(2, dim=-1)  # [tokens, rot / 2]
    h = x.view(x.shape[0], -1, head_size).clone()
    r = h[..., :rot]
    if neox:
        x1, x2 = r[..., : rot // 2], r[..., rot // 2 :]
    else:
        x1, x2 = r[..., 0::2], r[..., 1::2]
    o1 = x1 * cos[:, None] - x2 * sin[:, None]
    o2 = x2 * cos[:, None] + x1 * sin[:, None]
    if neox:
        h[..., :rot] = torch.cat([o1, o2], -1)
    else:
        h[..., :rot] = torch.stack([o1, o2], -1).flatten(-2)
    return h.view_as(x)


class PagedCase:
    """A small paged KV cache in vLLM's layout, with the contiguous keys and
    values it holds per sequence (what the reference attends over)."""

    def __init__(self, seed, alibi=False):
        g = torch.Generator().manual_seed(seed)
        self.num_seqs, self.num_heads, self.num_kv_heads, self.head_size = 3, 4, 2, 8
        self.block_size, self.x, num_blocks = 4, 4, 12
        self.seq_lens = torch.tensor([5, 1, 9], dtype=torch.int32)
        self.max_seq_len = int(self.seq_lens.max())
        max_blocks = math.ceil(self.max_seq_len / self.block_size)
        perm = torch.randperm(num_blocks, generator=g)[: self.num_seqs * max_blocks]
        self.block_tables = perm.view(self.num_seqs, max_blocks).to(torch.int32)
        self.query = torch.randn(self.num_seqs, self.num_heads, self.head_size, generator=g)
        self.key_cache = torch.randn(
            num_blocks,
            self.num_kv_heads,
            self.head_size // self.x,
            self.block_size,
            self.x,
            generator=g,
        )
        self.value_cache = torch.randn(
            num_blocks, self.num_kv_heads, self.head_size, self.block_size, generator=g
        )
        self.scale = 1.0 / math.sqrt(self.head_size)
        self.alibi = torch.randn(self.num_heads, generator=g) if alibi else None

    def leading_args(self, kv_cache_dtype="auto"):
        """paged_attention_v1's flat arguments after (out, query), up to and with
        kv_cache_dtype, in vLLM's order."""
        return (
            self.key_cache,
            self.value_cache,
            self.num_kv_heads,
            self.scale,
            self.block_tables,
            self.seq_lens,
            self.block_size,
            self.max_seq_len,
            self.alibi,
            kv_cache_dtype,
        )

    def flat_args(self, kv_cache_dtype="auto"):
        """All of them: then k_scale, v_scale (unquantized: 1), tp_rank and the
        block-sparse settings (none) as vLLM passes them."""
        one = torch.ones(())
        return self.leading_args(kv_cache_dtype) + (one, one, 0, 0, 0, 64, 0)

    def reference(self):
        out = torch.empty_like(self.query)
        group = self.num_heads // self.num_kv_heads
        for s in range(self.num_seqs):
            n = int(self.seq_lens[s])
            keys, values = [], []
            for t in range(n):
                b = int(self.block_tables[s, t // self.block_size])
                o = t % self.block_size
                keys.append(
                    self.key_cache[b, :, :, o, :].reshape(self.num_kv_heads, self.head_size)
                )
                values.append(self.value_cache[b, :, :, o])
            k = torch.stack(keys, 1)  # [kv_heads, n, head_size]
            vv = torch.stack(values, 1)
            for h in range(self.num_heads):
                scores = k[h // group] @ self.query[s, h] * self.scale
                if self.alibi is not None:
                    scores = scores + self.alibi[h] * (torch.arange(n) - (n - 1))
                out[s, h] = torch.softmax(scores, 0) @ vv[h // group]
        return out


class Compat(unittest.TestCase):
    def test_compat_is_green(self):
        r = subprocess.run([STRUCTOPC, "--compat", OLD, NEW], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("error:", r.stderr)
        self.assertNotIn("warning:", r.stderr)
        self.assertEqual(r.stderr.count("are now fields of record parameter"), 7, r.stderr)
        self.assertTrue(
            r.stderr.endswith("structopc: --compat: 0 breaking changes, 7 compatible changes\n"),
            r.stderr,
        )

    def test_registered_schemas_are_the_flat_ones(self):
        with tempfile.TemporaryDirectory() as out:
            subprocess.run([STRUCTOPC, "--emit", "json", "-o", out, OLD], check=True)
            with open(os.path.join(out, "vllm_flat.ops.json"), encoding="utf-8") as f:
                model = json.load(f)
        self.assertEqual(len(model["ops"]), 3)
        for op in model["ops"]:
            registered = getattr(flat, op["name"]).default._schema
            self.assertEqual(registered, torch._C.parse_schema("vllm_ref::" + op["schema"]))
            self.assertEqual(str(registered), "vllm_ref::" + op["schema"])
        self.assertEqual(len(flat.paged_attention_v1.default._schema.arguments), 19)


class FusedAddRmsNorm(unittest.TestCase):
    def setUp(self):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(3, 16, generator=g)
        self.res = torch.randn(3, 16, generator=g)
        self.w = torch.randn(16, generator=g)
        self.want, self.want_res = rms_norm_ref(self.x, self.res, self.w, 1e-5)

    def check(self, call):
        x, res = self.x.clone(), self.res.clone()
        self.assertIsNone(call(x, res))
        torch.testing.assert_close(x, self.want)
        torch.testing.assert_close(res, self.want_res)

    def test_python_record_api(self):
        self.check(lambda x, r: v.fused_add_rms_norm(x, r, v.RmsNorm(weight=self.w, eps=1e-5)))
        self.assertEqual(v.fused_add_rms_norm.slot_map["norm.eps"], "epsilon")

    def test_cpp_record_api(self):
        self.check(lambda x, r: cpp_api.fused_add_rms_norm(x, r, self.w, 1e-5))

    def test_flat_call_as_vllm_makes_it(self):
        self.check(lambda x, r: flat.fused_add_rms_norm(x, r, self.w, 1e-5))
        self.check(
            lambda x, r: flat.fused_add_rms_norm(input=x, residual=r, weight=self.w, epsilon=1e-5)
        )


class RotaryEmbedding(unittest.TestCase):
    def setUp(self):
        g = torch.Generator().manual_seed(2)
        self.tokens, self.heads, self.kv_heads, self.head_size, self.rot = 5, 2, 1, 8, 6
        self.positions = torch.tensor([0, 3, 7, 1, 2])
        self.cache = torch.randn(8, self.rot, generator=g)
        self.q = torch.randn(self.tokens, self.heads * self.head_size, generator=g)
        self.k = torch.randn(self.tokens, self.kv_heads * self.head_size, generator=g)

    def check(self, call, neox, with_key=True):
        q, k = self.q.clone(), self.k.clone()
        call(q, k if with_key else None, neox)
        torch.testing.assert_close(
            q, rope_ref(self.positions, self.q, self.head_size, self.cache, neox)
        )
        want_k = (
            rope_ref(self.positions, self.k, self.head_size, self.cache, neox)
            if with_key
            else self.k
        )
        torch.testing.assert_close(k, want_k)

    def test_python_record_api(self):
        for neox in (True, False):
            self.check(
                lambda q, k, neox: v.rotary_embedding(
                    self.positions,
                    q,
                    k,
                    v.Rope(head_size=self.head_size, cos_sin_cache=self.cache, neox_style=neox),
                ),
                neox,
            )
        self.check(
            lambda q, k, neox: v.rotary_embedding(
                self.positions, q, k, v.Rope(self.head_size, self.cache, neox)
            ),
            True,
            with_key=False,
        )

    def test_cpp_record_api(self):
        for neox in (True, False):
            self.check(
                lambda q, k, neox: cpp_api.rotary_embedding(
                    self.positions, q, k, self.head_size, self.cache, neox
                ),
                neox,
            )

    def test_flat_call_as_vllm_makes_it(self):
        self.check(
            lambda q, k, neox: flat.rotary_embedding(
                self.positions, q, k, self.head_size, self.cache, neox
            ),
            False,
        )
        self.check(
            lambda q, k, neox: flat.rotary_embedding(
                positions=self.positions,
                query=q,
                key=None,
                head_size=self.head_size,
                cos_sin_cache=self.cache,
                is_neox=neox,
            ),
            True,
            with_key=False,
        )


class PagedAttentionV1(unittest.TestCase):
    def records(self, c, dtype=v.KvCacheDtype.auto_):
        one = torch.ones(())
        return dict(
            cache=v.KvCache(key=c.key_cache, value=c.value_cache),
            heads=v.Heads(num_kv_heads=c.num_kv_heads, scale=c.scale),
            blocks=v.Blocks(
                tables=c.block_tables,
                seq_lens=c.seq_lens,
                size=c.block_size,
                max_seq_len=c.max_seq_len,
            ),
            alibi_slopes=c.alibi,
            quant=v.KvQuant(dtype=dtype, k_scale=one, v_scale=one),
            tp_rank=0,
            sparse=v.BlockSparse(0, 0, 64, 0),
        )

    def test_python_record_api(self):
        for alibi in (False, True):
            c = PagedCase(3, alibi)
            out = torch.zeros_like(c.query)
            v.paged_attention_v1(out, c.query, **self.records(c))
            torch.testing.assert_close(out, c.reference())

    def test_cpp_record_api(self):
        c = PagedCase(4, alibi=True)
        out = torch.zeros_like(c.query)
        cpp_api.paged_attention_v1(out, c.query, *c.leading_args())
        torch.testing.assert_close(out, c.reference())

    def test_flat_call_as_vllm_makes_it(self):
        c = PagedCase(5)
        out = torch.zeros_like(c.query)
        flat.paged_attention_v1(out, c.query, *c.flat_args())
        torch.testing.assert_close(out, c.reference())

    def test_enum_leaf_checks_the_flat_string(self):
        c = PagedCase(6)
        out = torch.zeros_like(c.query)
        with self.assertRaisesRegex(Exception, "fp9"):
            flat.paged_attention_v1(out, c.query, *c.flat_args("fp9"))
        with self.assertRaisesRegex(Exception, "unquantized cache"):
            v.paged_attention_v1(out, c.query, **self.records(c, v.KvCacheDtype.fp8))


if __name__ == "__main__":
    unittest_main.main(argv=[sys.argv[0]])
