#!/usr/bin/env python3
"""Cost model of GLM-5 decode on 8 x RTX PRO 6000 over PCIe, built from the H200 kernel numbers.

Projects tokens/s per decode step (single stream and batch 8/32) for tensor-parallel attention
(8 heads per rank) with expert-parallel MoE (32 experts per rank), and two alternatives, from
bytes per rank, launch/latency floors fitted to bench/RESULTS.md, and alpha-beta collectives.
Standard library only; run `python3 bench/cost_model.py`; the summary table is printed last.
See bench/COST_MODEL.md for the method and what each input is.
"""
import math
import random
from collections import namedtuple

# ------------------------------------------------------------------------------------------------
# Every input of the model, with where it comes from. "assumption" = to be replaced by a
# measurement on the 8-GPU machine (bench/COST_MODEL.md lists which measurement).
# ------------------------------------------------------------------------------------------------
INPUTS = {
    # --- GLM-5 dimensions: glm5-spec.md (project docs) §1, §2.5, §2.6, §3 ---
    "hidden": 6144,
    "dense_layers": 3,                # layers 0-2
    "moe_layers": 75,                 # layers 3-77 (MTP block 78 not used: no speculation here)
    "heads": 64,
    "q_lora": 2048,
    "kv_lora": 512,
    "qk_rope": 64,
    "qk_nope": 192,
    "v_head": 256,
    "index_heads": 32,
    "index_head_dim": 128,
    "index_topk": 2048,
    "dense_ffn": 12288,
    "moe_ffn": 2048,
    "experts": 256,
    "experts_per_token": 8,
    "shared_experts": 1,
    "vocab": 154880,
    "latent_row_bytes": 1152,         # (512 + 64) bf16 per cached position per layer (PERF.md)
    "index_key_bytes": 256,           # 128 bf16 indexer key per position per layer (PERF.md)

    # --- Deployment ---
    "ranks": 8,                       # 8 x RTX PRO 6000 (task)
    "contexts": [8192, 32768],        # context L (cached positions) of every request (choice)
    "batches": [1, 8, 32],            # requests decoding together, one token each (choice)
    # Weight type per tensor class ("4 bits" = Q4_K everywhere quantizable; router and indexer
    # head gate stay F32 as llama.cpp keeps ffn_gate_inp, and as our fixtures do: docs/fixtures.md)
    "quant": {
        "attention": "Q4_K", "indexer": "Q4_K", "indexer_gate": "F32", "router": "F32",
        "dense_ffn": "Q4_K", "shared_expert": "Q4_K", "expert_gate_up": "Q4_K",
        "expert_down": "Q4_K", "head": "Q4_K", "embed": "Q4_K",
    },
    # Bits per weight of each GGUF type: glm5-spec.md §7 block table (Q4_0: 18 B per 32)
    "bits_per_weight": {"F32": 32, "F16": 16, "BF16": 16, "Q8_0": 8.5, "Q6_K": 6.5625,
                        "Q5_K": 5.5, "Q4_K": 4.5, "Q4_0": 4.5},

    # --- H200 measurements: bench/RESULTS.md ---
    "h200_copy_bw": 4.23e12,          # B/s, measured device copy (PERF.md, RESULTS.md)
    # Quantized matvec, fraction of 4.23 TB/s on the quantized bytes (RESULTS.md "qlinear decode:
    # ring slots without slack, Q8_0 fp16 quants at one token", final binary, sm_120a tiles, one
    # run of every type): head 6144->154880 and o_proj 16384->6144, each at T=1 and T=8; the T=8
    # columns of the mma types from RESULTS.md 2026-11-30 "chunks of 1024 first above four
    # tokens" (lean staging, x sums on the tensor core). BF16's head reads faster than the copy
    # bandwidth (a copy also writes); F16 and F32 take the fp32 path at T=1.
    "matvec_eff": {   # type: (head T=1, head T=8, o_proj T=1, o_proj T=8)
        "F16": (0.991, 0.924, 0.852, 0.652), "BF16": (1.021, 0.985, 0.736, 0.681),
        "F32": (0.817, 0.334, 0.569, 0.241), "Q8_0": (0.941, 0.811, 0.719, 0.586),
        "Q4_K": (0.873, 0.621, 0.606, 0.446), "Q5_K": (0.857, 0.603, 0.622, 0.443),
        "Q4_0": (0.834, 0.643, 0.562, 0.429), "Q6_K": (0.818, 0.641, 0.591, 0.490),
    },
    "matvec_large_bytes": 256e6,      # from here on the head-shape efficiency applies (choice
                                      # between the measured 57 MB o_proj and 535 MB head shapes)
    # Tokens up to which a MoE step runs the per-pair decode kernels (no moe_group launch):
    # runtime/launch/Moe.h kMoeDecodeMaxTokens.
    "moe_decode_max_tokens": 4,
    "matvec_floor_us": 6.0,           # RESULTS.md: shapes with 576-6144 outputs run in 6-12 us,
                                      # launch/latency bound, CUDA-graph replay
    # Tiny-model decode as a CUDA graph: 2126 tok/s with sm_120a tiles, ~170 launches per token
    # (RESULTS.md "decode as a CUDA graph" and "the cuda backend"): per-launch cost of a small
    # kernel (norm, rope, slice, add, SwiGLU, routing) inside a graph.
    "tiny_graph_tok_s": 2126.0,
    "tiny_launches_per_token": 170,
    # Sparse MLA decode (our kernel, sm_120a tiles at SM120's occupancy: one CTA per SM, Q in
    # registers -- `glm5c-bench-sparse-mla --sm120-occupancy`), H = 8 and H = 64, top-k 2048,
    # context 8192, bf16 cache, graph replay: (batch, us). H = 8: RESULTS.md "sparse MLA: where
    # a CTA's time goes; one-round-trip merges" (the 8-head layout). H = 64: "four k-parts, ring
    # entries" (x 128 at commit 30ce0c3; batch 1-32 from the same entry's run of 920ed15);
    # re-measured 2026-11-30 ("32 heads per CTA"): the 16-head kernel at batch 1 and 8, the
    # 32-head one the runtime takes at one CTA per SM from batch 24 (188 SMs) at 32 and 128.
    "mla_bench_context": 8192,
    # H = 8 at batch 128: the two-CTAs-per-SM form the runtime takes there on SM120 (RESULTS.md
    # 2026-11-30 "two CTAs per SM on SM120"). Batch 1-32 (and H = 64 at 1 and 8) re-measured
    # with the spread merge (RESULTS.md 2026-11-30 "the spread merge" and the register-tile
    # entry's runs without it, the runtime's geometry at one CTA per SM on 132 SMs).
    "mla_h8_us": [(1, 7.4), (8, 14.3), (32, 33.5), (128, 86.5)],
    # H = 64 at batch 32 / 128 after the spread softmax (RESULTS.md 2026-11-30 "sparse MLA after
    # the spread softmax": the 32-head kernel, unchanged by the spread merge at its 2 splits).
    "mla_h64_us": [(1, 11.0), (8, 29.2), (32, 77.9), (128, 271.4)],
    # Indexer score + top-k (ours), 32 heads x 128, bf16 keys, SM120 tiles, overlapped launches:
    # (batch, context, us). RESULTS.md "top-k in one launch with a thread-block cluster per row"
    # (final table; topk_cluster past 8K positions). The score ran at the plan's two CTAs per SM,
    # SM120's occupancy (on the H200 the runtime now runs the four it holds: RESULTS.md
    # 2026-11-30 "one wave of the CTAs the device holds"), so these stay the SM120 estimate,
    # less the top-k's own gains measured since (score unchanged): topk_cluster's gathered
    # finish (RESULTS.md 2026-11-30 "the gathered finish") past 8K, topk_row's outputs gathered
    # in shared memory at 8K ("topk_row: outputs gathered in shared memory"), and the gathered
    # passes in one CTA's shared memory with the run emit ("the gathered passes in one CTA's
    # shared memory": top-k 0.6-6.7 us less per shape).
    "indexer_us": [(1, 8192, 11.3), (1, 32768, 13.9), (1, 131072, 30.0), (8, 32768, 31.8),
                   (8, 131072, 100.8), (32, 8192, 31.2), (32, 32768, 101.2),
                   (32, 131072, 352.3)],
    # One end-to-end check on one H200: the `width` fixture (real widths, 1 dense + 1 MoE
    # layer, mixed quants: Q8_0 attention/dense/shared, Q4_K expert gate/up, Q6_K expert down
    # and head), graph decode 679.8 tok/s, context < 100 (RESULTS.md "MoE routed experts at
    # decode": after the per-pair expert path and the qlinear split change; 587 before).
    # Re-measured: 791.4 tok/s after the one-token qlinear fold (a913f0f); 852.9 (median of
    # 845.7, 852.9, 892.4; device time 0.991 ms/token) after this session's qlinear changes.
    # The wall-clock rate of one 64-token run spreads with the host.
    "width_run_ms": 1000.0 / 852.9,
    "width_run_context": 64,
    "width_run_quant": {"attention": "Q8_0", "indexer": "Q8_0", "indexer_gate": "F32",
                        "router": "F32", "dense_ffn": "Q8_0", "shared_expert": "Q8_0",
                        "expert_gate_up": "Q4_K", "expert_down": "Q6_K", "head": "Q6_K",
                        "embed": "Q8_0"},   # docs/fixtures.md, mix `mixed`

    # --- Target: PERF.md ---
    "target_bw": 1.79e12,             # RTX PRO 6000 GDDR7, spec figure (a measured copy is
                                      # likely ~10% lower, as on the H200: 4.23 of 4.8 TB/s)
    "target_memory": 96e9,
    "reserved_memory": 4e9,           # assumption: activations, workspaces, CUDA/NCCL buffers

    # --- Collectives over PCIe 5.0 x16, no NVLink: ALL ASSUMPTIONS (no 8-GPU machine here) ---
    # alpha: NCCL small-message all-reduce over 8 PCIe GPUs, graph-captured, 15-30 us assumed;
    # public nccl-tests issues show 42-54 us for 8-byte all-reduces on 8 x RTX 3090/4090 (PCIe
    # 4.0, not graph-captured); one P2P remote read on 8 x RTX PRO 6000 is 4-6 us (p2pmark
    # README), the bound for a one-shot P2P all-reduce.
    "allreduce_alpha_us": 20.0,
    "alltoall_alpha_us": 20.0,        # assumption: a dispatch or combine costs one alpha too
    "p2p_bw": 40e9,                   # B/s per GPU, one direction; public RTX PRO 6000 P2P
                                      # measurements 39-54 GB/s (cross-/same-NUMA)
    "alpha_sweep_us": [10.0, 20.0, 40.0],

    # --- Routing: assumption, uniform over experts (a real router is skewed: worse for EP) ---
    "routing_trials": 4000,
    "seed": 20261129,

    # --- The peer: PERF.md; GLM-5 on 8 x RTX PRO 6000, SGLang, NVFP4, no MTP ---
    "sglang_tok_s": (35.0, 50.0),
    # The weights behind that number: NVFP4 (4 bits + an 8-bit scale per 16 = 4.5 bits) only on
    # the routed experts; attention, dense MLPs, shared experts kept BF16 (model card of the
    # GLM-5.1-NVFP4 checkpoint used with SGLang); head assumed BF16.
    "sglang_mix": {"attention": "BF16", "indexer": "BF16", "dense_ffn": "BF16",
                   "shared_expert": "BF16", "head": "BF16", "embed": "BF16"},
}

Kernel = namedtuple("Kernel", "name family bytes qtype group launches tokens")
Kernel.__new__.__defaults__ = (None, None, 1, None)   # qtype, group, launches, tokens

FIT_FAMILIES = ("mla_h8", "mla_h64", "indexer")


# ---------------------------------------------------------------- sizes -------------------------
def weight_bytes(params, cls, cfg=INPUTS):
    return params * cfg["bits_per_weight"][cfg["quant"][cls]] / 8.0


def mla_bytes(tokens, heads, context, cfg=INPUTS):
    """PERF.md counting: distinct latent rows + Q + O, per layer."""
    rows = min(cfg["index_topk"], context)
    q_o = (cfg["kv_lora"] + cfg["qk_rope"]) + cfg["kv_lora"]     # 576 + 512 bf16 per head
    return tokens * rows * cfg["latent_row_bytes"] + tokens * heads * q_o * 2


def indexer_bytes(tokens, context, cfg=INPUTS):
    return tokens * context * cfg["index_key_bytes"]


def expert_params(cfg=INPUTS):
    return 3 * cfg["hidden"] * cfg["moe_ffn"]


# ---------------------------------------------------------------- calibration -------------------
def fit_line(points):
    """Least-squares t = a + s*x over (x, t) points."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    mt = sum(t for _, t in points) / n
    s = sum((x - mx) * (t - mt) for x, t in points) / sum((x - mx) ** 2 for x, _ in points)
    return mt - s * mx, s


def family_points(family, cfg=INPUTS):
    """Measured H200 (shape, bytes, us) points of a kernel family."""
    if family == "indexer":
        return [("B=%d L=%dK" % (b, l // 1024), indexer_bytes(b, l, cfg), t)
                for b, l, t in cfg["indexer_us"]]
    heads = 8 if family == "mla_h8" else 64
    return [("B=%d" % b, mla_bytes(b, heads, cfg["mla_bench_context"], cfg), t)
            for b, t in cfg[family + "_us"]]


def fit_families(cfg=INPUTS):
    """Per family: latency floor (us) and streaming efficiency (fraction of copy bandwidth)."""
    fits = {}
    for fam in FIT_FAMILIES:
        a, s = fit_line([(x, t) for _, x, t in family_points(fam, cfg)])
        fits[fam] = (a, 1e6 / (s * cfg["h200_copy_bw"]) if s > 0 else 1.0)
    fits["matvec"] = (cfg["matvec_floor_us"], None)
    fits["small"] = (1e6 / cfg["tiny_graph_tok_s"] / cfg["tiny_launches_per_token"], None)
    return fits


def matvec_efficiency(qtype, nbytes, tokens, cfg=INPUTS):
    head_t1, head_t8, mid_t1, mid_t8 = cfg["matvec_eff"][qtype]
    large = nbytes >= cfg["matvec_large_bytes"]
    if tokens > 1:   # T=32 assumed like T=8
        return head_t8 if large else mid_t8
    return head_t1 if large else mid_t1


# ---------------------------------------------------------------- routing -----------------------
def routing_stats(batch, ranks, cfg=INPUTS):
    """Uniform routing: mean over trials of (max distinct experts on one rank, distinct total)."""
    rng = random.Random(cfg["seed"] + batch)
    per_rank = cfg["experts"] // ranks
    max_sum = total_sum = 0
    for _ in range(cfg["routing_trials"]):
        used = set()
        for _ in range(batch):
            used.update(rng.sample(range(cfg["experts"]), cfg["experts_per_token"]))
        counts = [0] * ranks
        for e in used:
            counts[e // per_rank] += 1
        max_sum += max(counts)
        total_sum += len(used)
    n = cfg["routing_trials"]
    return max_sum / n, total_sum / n


# ---------------------------------------------------------------- kernel lists ------------------
# Each list follows the decode step list glm5c compiles today (one MoE layer: 33 steps, 37
# launches); `group` names the launch it joins in the fused plan of DESIGN.md/KERNELS.md (norm in
# the next product's prologue, RoPE + cache append, SwiGLU in an epilogue, products sharing an
# input in one launch, combine + W_UV in one kernel).
def attention_kernels(head_share, tokens, context, cfg=INPUTS):
    h, ql, kvl, r = cfg["hidden"], cfg["q_lora"], cfg["kv_lora"], cfg["qk_rope"]
    heads = round(cfg["heads"] * head_share)
    qk = cfg["qk_nope"] + r
    ih, idim = cfg["index_heads"], cfg["index_head_dim"]
    def w(params, cls):
        return weight_bytes(params, cls, cfg)

    return [
        Kernel("attn_norm", "small", 0, group="attn_in"),
        Kernel("q_a", "matvec", w(h * ql, "attention"), cfg["quant"]["attention"], "attn_in"),
        Kernel("q_a_norm", "small", 0, group="q_up"),
        Kernel("q_b", "matvec", w(ql * cfg["heads"] * qk, "attention") * head_share,
               cfg["quant"]["attention"], "q_up"),
        Kernel("rope_q", "small", 0, group="q_up"),
        Kernel("kv_a", "matvec", w(h * (kvl + r), "attention"), cfg["quant"]["attention"],
               "attn_in"),
        Kernel("slice_latent", "small", 0, group="kv_store"),
        Kernel("kv_a_norm", "small", 0, group="kv_store"),
        Kernel("slice_rope", "small", 0, group="kv_store"),
        Kernel("idx_q_b", "matvec", w(ql * ih * idim, "indexer"), cfg["quant"]["indexer"],
               "q_up"),
        Kernel("rope_idx", "small", 0, group="q_up"),
        Kernel("idx_k", "matvec", w(h * idim, "indexer"), cfg["quant"]["indexer"], "attn_in"),
        Kernel("idx_k_norm", "small", 0, group="kv_store"),
        Kernel("idx_gate", "matvec", w(h * ih, "indexer_gate"), cfg["quant"]["indexer_gate"],
               "attn_in"),
        Kernel("rope_cache_append", "small", 0, group="kv_store"),
        Kernel("indexer_score_topk", "indexer", indexer_bytes(tokens, context, cfg),
               group="indexer", launches=2),
        Kernel("slice_q_nope", "small", 0, group="absorb"),
        Kernel("slice_q_rope", "small", 0, group="absorb"),
        Kernel("k_b_absorb", "matvec", w(cfg["qk_nope"] * kvl * heads, "attention"),
               cfg["quant"]["attention"], "absorb"),
        Kernel("sparse_mla", "mla_h8" if heads <= 16 else "mla_h64",
               mla_bytes(tokens, heads, context, cfg), group="mla"),
        Kernel("v_b", "matvec", w(kvl * cfg["v_head"] * heads, "attention"),
               cfg["quant"]["attention"], "mla"),
        Kernel("o_proj", "matvec", w(cfg["heads"] * cfg["v_head"] * h, "attention") * head_share,
               cfg["quant"]["attention"], "o_proj"),
        Kernel("residual_add", "small", 0, group="ffn_in"),
    ]


def moe_kernels(expert_equivalents, shared_share, expert_tokens=1, cfg=INPUTS, batch=1):
    """Routed experts: `expert_equivalents` whole experts' bytes on the busiest rank, each
    multiplying `expert_tokens` rows."""
    h, f = cfg["hidden"], cfg["moe_ffn"]
    q = cfg["quant"]
    gate_up = weight_bytes(2 * h * f, "expert_gate_up", cfg) * expert_equivalents
    down = weight_bytes(h * f, "expert_down", cfg) * expert_equivalents
    sh = weight_bytes(h * f, "shared_expert", cfg) * shared_share
    return [
        Kernel("ffn_norm", "small", 0, group="ffn_in"),
        Kernel("router", "matvec", weight_bytes(h * cfg["experts"], "router", cfg), q["router"],
               "ffn_in"),
    ] + ([] if batch <= cfg["moe_decode_max_tokens"] else [
        Kernel("moe_group", "small", 0, group="ffn_in"),
    ]) + [
        Kernel("experts_gate_up", "matvec", gate_up, q["expert_gate_up"], "moe_up",
               tokens=expert_tokens),
        Kernel("experts_down", "matvec", down, q["expert_down"], "moe_down",
               tokens=expert_tokens),
        Kernel("moe_combine", "small", 0, group="moe_down"),
        Kernel("shared_gate", "matvec", sh, q["shared_expert"], "moe_up"),
        Kernel("shared_up", "matvec", sh, q["shared_expert"], "moe_up"),
        Kernel("swiglu", "small", 0, group="moe_up"),
        Kernel("shared_down", "matvec", sh, q["shared_expert"], "moe_down"),
        Kernel("add_shared", "small", 0, group="moe_down"),
        Kernel("residual_add", "small", 0, group="moe_down"),
    ]


def dense_ffn_kernels(share, cfg=INPUTS):
    part = weight_bytes(cfg["hidden"] * cfg["dense_ffn"], "dense_ffn", cfg) * share
    qt = cfg["quant"]["dense_ffn"]
    return [
        Kernel("ffn_norm", "small", 0, group="ffn_in"),
        Kernel("ffn_gate", "matvec", part, qt, "ffn_in"),
        Kernel("ffn_up", "matvec", part, qt, "ffn_in"),
        Kernel("swiglu", "small", 0, group="ffn_in"),
        Kernel("ffn_down", "matvec", part, qt, "ffn_out"),
        Kernel("residual_add", "small", 0, group="ffn_out"),
    ]


def head_kernels(share, cfg=INPUTS):
    return [
        Kernel("embed", "small", 0, group="embed"),
        Kernel("output_norm", "small", 0, group="head"),
        Kernel("head", "matvec",
               weight_bytes(cfg["hidden"] * cfg["vocab"], "head", cfg) * share,
               cfg["quant"]["head"], "head"),
        Kernel("argmax", "small", 0, group="head"),
    ]


def fuse(kernels):
    """Fused plan: one launch per group; its floor is the largest member floor."""
    groups, order = {}, []
    for k in kernels:
        if k.group not in groups:
            groups[k.group] = []
            order.append(k.group)
        groups[k.group].append(k)
    return [groups[g] for g in order]


# ---------------------------------------------------------------- timing ------------------------
def stream_us(k, tokens, bw, eff_mode, fits, cfg=INPUTS):
    if k.bytes == 0:
        return 0.0
    if eff_mode == "roofline":
        eff = 1.0
    elif k.family == "matvec":
        eff = matvec_efficiency(k.qtype, k.bytes, k.tokens or tokens, cfg)
    else:
        eff = fits[k.family][1]
    return k.bytes / (bw * eff) * 1e6


def kernels_us(kernels, tokens, bw, eff_mode, fused, fits, cfg=INPUTS):
    """(time us, launches, floors us, streaming us) of a kernel list run back to back; a fused
    launch costs its largest member floor plus each member's streaming time."""
    launches = fuse(kernels) if fused else [[k] for k in kernels]
    floors = sum(max(fits[k.family][0] for k in m) for m in launches)
    streams = sum(stream_us(k, tokens, bw, eff_mode, fits, cfg) for m in launches for k in m)
    count = len(launches) if fused else sum(k.launches for k in kernels)
    return floors + streams, count, floors, streams


def bytes_sent_per_rank(kind, nbytes, cfg=INPUTS):
    """Ring all-reduce ("ar"): 2(p-1)/p of the buffer; all-gather or reduce-scatter ("gather"):
    (p-1)/p; all-to-all ("a2a"): nbytes is already what the rank sends."""
    p = cfg["ranks"]
    return {"ar": 2.0 * (p - 1) / p, "gather": (p - 1.0) / p, "a2a": 1.0}[kind] * nbytes


def collectives_us(colls, alpha=None, cfg=INPUTS):
    """alpha + bytes / P2P bandwidth, summed over (kind, bytes); alpha None takes each kind's
    latency from INPUTS."""
    total = 0.0
    for kind, nbytes in colls:
        if alpha is None:
            lat = cfg["alltoall_alpha_us" if kind == "a2a" else "allreduce_alpha_us"]
        else:
            lat = alpha
        total += lat + bytes_sent_per_rank(kind, nbytes, cfg) / cfg["p2p_bw"] * 1e6
    return total


# ---------------------------------------------------------------- schemes -----------------------
SCHEMES = {
    "tp_ep_ar": "TP8 attention + EP8 MoE, 2 all-reduces/layer",
    "tp_tp_ar": "TP8 attention + TP8 MoE, 2 all-reduces/layer",
    "dp_ep_a2a": "DP attention + EP8 MoE, dispatch/combine all-to-all",
}


def layer_plan(scheme, batch, context, moe, routing, cfg=INPUTS):
    """Kernels on the critical-path rank, tokens they see, and collectives (kind, bytes)."""
    p, h = cfg["ranks"], cfg["hidden"]
    act = batch * h * 2                       # bf16 hidden rows of the whole batch
    dp = scheme == "dp_ep_a2a"
    local = math.ceil(batch / p) if dp else batch
    kernels = attention_kernels(1.0 if dp else 1.0 / p, local, context, cfg)
    if moe:
        max_rank, distinct = routing
        experts = distinct / p if scheme == "tp_tp_ar" else max_rank
        rows_per_expert = max(1, round(batch * cfg["experts_per_token"] / distinct))
        kernels += moe_kernels(experts, 1.0 if dp else 1.0 / p, rows_per_expert, cfg, local)
        if dp:
            out = local * cfg["experts_per_token"] * h * 2 * (p - 1) / p
            colls = [("a2a", out), ("a2a", out)]
        else:
            colls = [("ar", act), ("ar", act)]
    else:
        kernels += dense_ffn_kernels(1.0 / p, cfg)
        colls = [("gather", act), ("gather", act)] if dp else [("ar", act), ("ar", act)]
    return kernels, local, colls


def step(scheme, batch, context, eff_mode="measured", fused=False, alpha=None,
         no_floors=False, cfg=INPUTS, fits=None, routing=None):
    """One decode step (one token for each of `batch` requests) on the target: times in us.
    alpha None: collective latencies from INPUTS; a number: that latency for every collective."""
    fits = fits or fit_families(cfg)
    if no_floors:
        fits = {k: (0.0, v[1]) for k, v in fits.items()}
    bw = cfg["target_bw"]
    routing = routing or routing_stats(batch, cfg["ranks"], cfg)
    total = {"kernels": 0.0, "floors": 0.0, "streams": 0.0, "comm": 0.0, "launches": 0,
             "colls": 0}
    for moe, count in ((False, cfg["dense_layers"]), (True, cfg["moe_layers"])):
        kernels, local, colls = layer_plan(scheme, batch, context, moe, routing, cfg)
        t, n, fl, st = kernels_us(kernels, local, bw, eff_mode, fused, fits, cfg)
        total["kernels"] += count * t
        total["floors"] += count * fl
        total["streams"] += count * st
        total["launches"] += count * n
        total["comm"] += count * collectives_us(colls, alpha, cfg)
        total["colls"] += count * len(colls)
    head_share = 1.0 / cfg["ranks"]
    t, n, fl, st = kernels_us(head_kernels(head_share, cfg), batch, bw, eff_mode, fused, fits, cfg)
    total["kernels"] += t
    total["floors"] += fl
    total["streams"] += st
    total["launches"] += n
    head_colls = 2 if scheme == "dp_ep_a2a" else 1   # gather of hidden (DP) + of the argmax
    total["comm"] += head_colls * (cfg["allreduce_alpha_us"] if alpha is None else alpha)
    total["colls"] += head_colls
    total["step"] = total["kernels"] + total["comm"]
    total["tok_s_stream"] = 1e6 / total["step"]
    total["tok_s_total"] = batch * total["tok_s_stream"]
    return total


# ---------------------------------------------------------------- memory ------------------------
def rank_weight_bytes(scheme, cfg=INPUTS):
    """Resident weights per rank (embedding replicated, head vocab-parallel)."""
    p, h, ql, kvl = cfg["ranks"], cfg["hidden"], cfg["q_lora"], cfg["kv_lora"]
    heads_share = 1.0 if scheme == "dp_ep_a2a" else 1.0 / p
    qk = cfg["qk_nope"] + cfg["qk_rope"]
    replicated = h * ql + h * (kvl + cfg["qk_rope"])
    sharded = (ql * cfg["heads"] * qk + cfg["heads"] * kvl * (cfg["qk_nope"] + cfg["v_head"])
               + cfg["heads"] * cfg["v_head"] * h)
    attn = weight_bytes(replicated + sharded * heads_share, "attention", cfg)
    ih, idim = cfg["index_heads"], cfg["index_head_dim"]
    attn += weight_bytes(ql * ih * idim + h * idim, "indexer", cfg)
    attn += weight_bytes(h * ih, "indexer_gate", cfg)
    e = expert_params(cfg)
    moe = (weight_bytes(e * 2 / 3, "expert_gate_up", cfg)
           + weight_bytes(e / 3, "expert_down", cfg)) * cfg["experts"] / p
    moe += weight_bytes(e, "shared_expert", cfg) * (1.0 if scheme == "dp_ep_a2a" else 1.0 / p)
    moe += weight_bytes(h * cfg["experts"], "router", cfg)
    dense = weight_bytes(3 * h * cfg["dense_ffn"], "dense_ffn", cfg) / p
    layers = cfg["dense_layers"] + cfg["moe_layers"]
    vocab = (weight_bytes(h * cfg["vocab"], "head", cfg) / p
             + weight_bytes(h * cfg["vocab"], "embed", cfg))
    return layers * attn + cfg["moe_layers"] * moe + cfg["dense_layers"] * dense + vocab


def kv_bytes_per_rank(scheme, batch, context, cfg=INPUTS):
    per_pos = (cfg["latent_row_bytes"] + cfg["index_key_bytes"]) * (cfg["dense_layers"]
                                                                     + cfg["moe_layers"])
    requests = math.ceil(batch / cfg["ranks"]) if scheme == "dp_ep_a2a" else batch
    return requests * context * per_pos


def kv_fits(scheme, batch, context, cfg=INPUTS):
    free = cfg["target_memory"] - cfg["reserved_memory"] - rank_weight_bytes(scheme, cfg)
    return kv_bytes_per_rank(scheme, batch, context, cfg) <= free


# ---------------------------------------------------------------- H200 check --------------------
def width_check_us(cfg=INPUTS):
    """The `width` fixture on one H200 (1 dense + 1 MoE layer, mixed quants) as the model sees
    it: (us, launches, bytes)."""
    mixed = dict(cfg, quant=cfg["width_run_quant"])
    fits = fit_families(mixed)
    L, bw = mixed["width_run_context"], mixed["h200_copy_bw"]
    kernels = (attention_kernels(1.0, 1, L, mixed) + dense_ffn_kernels(1.0, mixed)
               + attention_kernels(1.0, 1, L, mixed)
               + moe_kernels(mixed["experts_per_token"], 1.0, 1, mixed)
               + head_kernels(1.0, mixed))
    t, n, _, _ = kernels_us(kernels, 1, bw, "measured", False, fits, mixed)
    return t, n, sum(k.bytes for k in kernels)


# ---------------------------------------------------------------- printing ----------------------
def print_table(title, headers, rows):
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(headers[i]), *(len(r[i]) for r in cells)) for i in range(len(headers))]
    print("\n" + title)
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in cells:
        print("| " + " | ".join(c.rjust(w) if i else c.ljust(w)
                                for i, (c, w) in enumerate(zip(r, widths))) + " |")


def mb(x):
    return "%.2f" % (x / 1e6)


def ctx_name(L):
    return "%dK" % (L // 1024)


def print_calibration(fits, cfg=INPUTS):
    rows = []
    for fam in FIT_FAMILIES:
        a, eff = fits[fam]
        for shape, x, t in family_points(fam, cfg):
            model = a + x / (cfg["h200_copy_bw"] * eff) * 1e6
            rows.append([fam, "%.1f" % a, "%.0f%%" % (100 * eff), shape, mb(x), "%.1f" % t,
                         "%.1f" % model])
    print_table("H200 fits, t = floor + bytes / (4.23 TB/s x eff) (bench/RESULTS.md points)",
                ["family", "floor us", "eff", "shape", "MB", "measured us", "model us"], rows)
    print("matvec: floor %.1f us + bytes / (bw x eff[type]) (o_proj-shape eff; head-shape eff "
          "from %.0f MB); small kernel in a graph: %.2f us"
          % (fits["matvec"][0], cfg["matvec_large_bytes"] / 1e6, fits["small"][0]))
    t, n, nbytes = width_check_us(cfg)
    print("check, width fixture on one H200 (%d launches, %.2f GB/token): model %.2f ms, "
          "measured %.2f ms (model/measured %.2f)"
          % (n, nbytes / 1e9, t / 1e3, cfg["width_run_ms"], t / 1e3 / cfg["width_run_ms"]))


def print_layer_breakdown(batch, context, fits, routing, cfg=INPUTS):
    kernels, local, colls = layer_plan("tp_ep_ar", batch, context, True, routing, cfg)
    bw, rows = cfg["target_bw"], []
    for members in fuse(kernels):
        t, n, fl, st = kernels_us(members, local, bw, "measured", False, fits, cfg)
        tf, _, _, _ = kernels_us(members, local, bw, "measured", True, fits, cfg)
        rows.append([members[0].group, n, mb(sum(k.bytes for k in members)), "%.1f" % fl,
                     "%.1f" % st, "%.1f" % t, "%.1f" % tf])
    tot, n, fl, st = kernels_us(kernels, local, bw, "measured", False, fits, cfg)
    totf, nf, _, _ = kernels_us(kernels, local, bw, "measured", True, fits, cfg)
    comm = collectives_us(colls, cfg=cfg)
    rows.append(["all-reduce x2 (12 KB each)", 2, "-", "-", "-", "%.1f" % comm, "%.1f" % comm])
    rows.append(["MoE layer total", "%d (fused %d)" % (n, nf),
                 mb(sum(k.bytes for k in kernels)), "%.1f" % fl, "%.1f" % st,
                 "%.1f" % (tot + comm), "%.1f" % (totf + comm)])
    print_table("One MoE layer on the busiest rank, B=%d, L=%s, TP8 attention + EP8 MoE, "
                "measured efficiencies scaled to 1.79 TB/s (expected busiest rank: %.2f experts)"
                % (batch, ctx_name(context), routing[0]),
                ["launch group", "launches", "MB read", "floors us", "bytes us", "us today",
                 "us fused"], rows)


def print_bytes_table(fits, routings, cfg=INPUTS):
    rows = []
    for b in cfg["batches"]:
        for L in cfg["contexts"]:
            kernels, local, _ = layer_plan("tp_ep_ar", b, L, True, routings[b], cfg)
            by = {}
            for k in kernels:
                key = {"indexer": "idx keys", "mla_h8": "latent", "mla_h64": "latent"}.get(
                    k.family, "experts" if k.name.startswith("experts") else "other weights")
                by[key] = by.get(key, 0) + k.bytes
            total = sum(by.values())
            rows.append([b, ctx_name(L), mb(by["other weights"]), mb(by["experts"]),
                         mb(by["latent"]), mb(by["idx keys"]), mb(total), mb(total / b)])
    print_table("Bytes read per rank per MoE layer and step (TP8 attention + EP8 MoE; "
                "busiest rank; MB)",
                ["B", "L", "weights (attn, idx, router, shared)", "routed experts",
                 "latent rows", "indexer keys", "total", "per token"], rows)
    dense, _, _ = layer_plan("tp_ep_ar", 1, cfg["contexts"][0], False, routings[1], cfg)
    print("B=1, L=%s: a dense layer reads %s MB per rank, the head %s MB (vocab-parallel)"
          % (ctx_name(cfg["contexts"][0]), mb(sum(k.bytes for k in dense)),
             mb(sum(k.bytes for k in head_kernels(1.0 / cfg["ranks"], cfg)))))


def print_collective_table(routings, cfg=INPUTS):
    rows = []
    for b in cfg["batches"]:
        row = [b]
        for scheme in ("tp_ep_ar", "dp_ep_a2a"):
            _, _, colls = layer_plan(scheme, b, cfg["contexts"][0], True, routings[b], cfg)
            moved = sum(bytes_sent_per_rank(kind, n, cfg) for kind, n in colls)
            row += ["%.0f" % (moved / 1e3)] + ["%.1f" % collectives_us(colls, a, cfg)
                                                 for a in cfg["alpha_sweep_us"]]
        rows.append(row)
    alphas = ["alpha %.0f" % a for a in cfg["alpha_sweep_us"]]
    print_table("Collectives per MoE layer, us: (a) 2 ring all-reduces of B x 12 KB; (b) dispatch "
                "+ combine all-to-all, bf16 rows, each rank's own ceil(B/8) tokens",
                ["B", "(a) KB sent/rank"] + ["(a) " + a for a in alphas]
                + ["(b) KB sent/rank"] + ["(b) " + a for a in alphas], rows)


def print_scheme_table(fits, routings, cfg=INPUTS):
    print_collective_table(routings, cfg)
    rows = []
    for b in cfg["batches"]:
        for L in cfg["contexts"]:
            for s in SCHEMES:
                r = step(s, b, L, fits=fits, routing=routings[b], cfg=cfg)
                rows.append([b, ctx_name(L), s, "%.2f" % (r["kernels"] / 1e3),
                             "%.2f" % (r["comm"] / 1e3), r["colls"], "%.2f" % (r["step"] / 1e3),
                             "%.1f" % r["tok_s_stream"], "%.0f" % r["tok_s_total"],
                             "yes" if kv_fits(s, b, L, cfg) else "NO"])
    print("\nSchemes: " + "; ".join("%s = %s" % kv for kv in SCHEMES.items()))
    print("weights per rank: " + ", ".join("%s %.1f GB" % (s, rank_weight_bytes(s, cfg) / 1e9)
                                           for s in SCHEMES))
    print_table("Collective schemes (today's kernel list, measured efficiencies, alpha %.0f us, "
                "%.0f GB/s P2P)" % (cfg["allreduce_alpha_us"], cfg["p2p_bw"] / 1e9),
                ["B", "L", "scheme", "kernels ms", "collectives ms", "n coll", "step ms",
                 "tok/s/stream", "tok/s total", "KV fits"], rows)


def print_sensitivity(fits, routings, cfg=INPUTS):
    cases = [("today, measured", "tp_ep_ar", "measured", False, False),
             ("today, roofline", "tp_ep_ar", "roofline", False, False),
             ("fused, measured", "tp_ep_ar", "measured", True, False),
             ("fused, roofline", "tp_ep_ar", "roofline", True, False),
             ("fused, roofline, TP8 MoE", "tp_tp_ar", "roofline", True, False),
             ("bytes at roofline + collectives only", "tp_ep_ar", "roofline", True, True)]
    rows = []
    for L in cfg["contexts"]:
        for alpha in cfg["alpha_sweep_us"]:
            row = [ctx_name(L), "%.0f" % alpha]
            for _, scheme, eff, fused, nf in cases:
                r = step(scheme, 1, L, eff, fused, alpha, no_floors=nf, fits=fits,
                         routing=routings[1], cfg=cfg)
                row.append("%.1f (%.0f%%)" % (r["tok_s_stream"], 100 * r["comm"] / r["step"]))
            rows.append(row)
    print_table("Sensitivity, B=1, TP8 attention + EP8 MoE unless noted: tok/s (share of the "
                "step in collectives)", ["L", "alpha us"] + [c[0] for c in cases], rows)


def cheapest_scheme(batch, context, fits, routing, cfg=INPUTS):
    """(scheme, tok/s per stream) of the fastest scheme whose KV cache fits."""
    fitting = [s for s in SCHEMES if kv_fits(s, batch, context, cfg)]
    speeds = {s: step(s, batch, context, fits=fits, routing=routing, cfg=cfg)["tok_s_stream"]
              for s in fitting}
    best = max(speeds, key=speeds.get)
    return best, speeds[best]


def print_summary(fits, routings, cfg=INPUTS):
    lo, hi = cfg["sglang_tok_s"]
    width_model_us, _, _ = width_check_us(cfg)
    slowdown = cfg["width_run_ms"] * 1e3 / width_model_us
    rows = []
    for b in cfg["batches"]:
        for L in cfg["contexts"]:
            r = routings[b]
            today = step("tp_ep_ar", b, L, fits=fits, routing=r, cfg=cfg)
            fused = step("tp_ep_ar", b, L, fused=True, fits=fits, routing=r, cfg=cfg)
            roof = step("tp_ep_ar", b, L, "roofline", True, fits=fits, routing=r, cfg=cfg)
            calibrated = 1e6 / (today["kernels"] * slowdown + today["comm"])
            best, best_tok_s = cheapest_scheme(b, L, fits, r, cfg)
            vs = ("%.2f-%.2fx" % (today["tok_s_stream"] / hi, today["tok_s_stream"] / lo)
                  if b == 1 else "-")
            rows.append([b, ctx_name(L), today["launches"], today["colls"],
                         "%.2f" % (today["step"] / 1e3),
                         "%.0f%%" % (100 * today["comm"] / today["step"]),
                         "%.1f" % today["tok_s_stream"], "%.0f" % today["tok_s_total"],
                         "%.1f" % calibrated, "%.1f" % fused["tok_s_stream"],
                         "%.1f" % roof["tok_s_stream"], "%s %.1f" % (best, best_tok_s),
                         "yes" if kv_fits("tp_ep_ar", b, L, cfg) else "NO", vs])
    sg = dict(cfg, quant=dict(cfg["quant"], **cfg["sglang_mix"]))
    sg_today = step("tp_ep_ar", 1, cfg["contexts"][0], fits=fits, routing=routings[1], cfg=sg)
    sg_roof = step("tp_ep_ar", 1, cfg["contexts"][0], "roofline", True, fits=fits,
                   routing=routings[1], cfg=sg)
    t = step("tp_ep_ar", 1, cfg["contexts"][0], fits=fits, routing=routings[1], cfg=cfg)
    print("\nB=1, L=%s, today: kernel floors %.1f ms + bytes %.1f ms + collectives %.1f ms "
          "(%d launches, %d collectives) = %.1f ms per token"
          % (ctx_name(cfg["contexts"][0]), t["floors"] / 1e3, t["streams"] / 1e3,
             t["comm"] / 1e3, t["launches"], t["colls"], t["step"] / 1e3))
    print("Same plan with the NVFP4 checkpoint's mix (BF16 attention, indexer, dense, shared, "
          "head; 4.5-bit experts), B=1, L=%s: %.1f tok/s today, %.1f fused at roofline"
          % (ctx_name(cfg["contexts"][0]), sg_today["tok_s_stream"], sg_roof["tok_s_stream"]))
    print_table("GLM-5 at 4.5 bits/weight on 8 x RTX PRO 6000 over PCIe, TP8 attention + EP8 "
                "MoE, all-reduce alpha %.0f us: projected decode tok/s (SGLang, NVFP4, no MTP: "
                "%.0f-%.0f single stream)" % (cfg["allreduce_alpha_us"], lo, hi),
                ["B", "L", "launches", "collectives", "step ms", "in coll.", "tok/s/stream",
                 "tok/s total", "x width check %.2f" % slowdown, "fused", "fused+roofline",
                 "cheapest scheme (KV fits): tok/s/stream", "KV fits", "today vs SGLang"],
                rows)


def main(cfg=INPUTS):
    fits = fit_families(cfg)
    routings = {b: routing_stats(b, cfg["ranks"], cfg) for b in cfg["batches"]}
    print("GLM-5 decode cost model: %d ranks, weights %s, target %.2f TB/s, "
          "P2P %.0f GB/s, all-reduce alpha %.0f us"
          % (cfg["ranks"], cfg["quant"]["expert_gate_up"], cfg["target_bw"] / 1e12,
             cfg["p2p_bw"] / 1e9, cfg["allreduce_alpha_us"]))
    print("routing (uniform, %d trials): " % cfg["routing_trials"] + ", ".join(
        "B=%d: busiest rank %.2f experts, %.1f distinct" % (b, *routings[b])
        for b in cfg["batches"]))
    print_calibration(fits, cfg)
    print_layer_breakdown(1, cfg["contexts"][0], fits, routings[1], cfg)
    print_bytes_table(fits, routings, cfg)
    print_scheme_table(fits, routings, cfg)
    print_sensitivity(fits, routings, cfg)
    print_summary(fits, routings, cfg)


if __name__ == "__main__":
    main()
