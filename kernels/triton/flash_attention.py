# flash_attention, Triton: o[b, h, i] = sum_j softmax_j(scale * q[b, h, i] . k[b, g, j]) v[b, g, j],
# g = h / (H / Hkv) (grouped-query attention), keys j > i masked out when causal.
# Inputs q[B, H, S, D], k[B, Hkv, S, D], v[B, Hkv, S, D]; output o[B, H, S, D]; scalars[0] =
# scale, scalars[1] = causal (0 or 1, read at run time: one build serves both). fp16, bf16 and
# fp32 (fp32 stays fp32: tl.dot at IEEE precision), any B, H, S >= 1, D <= 128, any scale;
# inner strides 1.
#
# A program owns BLOCK_M queries of one (batch, head) and streams the keys and values in
# BLOCK_N blocks through tl.dot (wgmma on sm_90, loads NUM_STAGES deep), with the online softmax
# in fp32: a running max, a running sum and an accumulator rescaled when the max moves.
# Where the instructions of a step go (the softmax is serial with the wgmmas here, so each one
# saved shortens the step):
#   - the scale is folded into exp2's argument: max(s) * c, then exp2(s * c - max), one FMA a
#     score (c = scale * log2(e) > 0 commutes with the max);
#   - key blocks wholly visible (below the diagonal, or inside S) take a loop without masks;
#     only the blocks that cross the diagonal or the end of S take the masked one, so no EVEN
#     flag is needed;
#   - key and value blocks come by TMA (tensor descriptors made on the device, one per program in
#     Triton's global scratch): no address or mask arithmetic a step, and the copies run beside
#     the softmax (0.82 -> 0.90x SDPA causal, 0.78 -> 0.87x non-causal at 4x32x4096x128 bf16 on
#     an H200, against pointer loads whose 32-bit steps were already a fifth cheaper).
# Launch order: groups of HEAD_GROUP (batch, head)s; within a group the query blocks longest
# first (causal: those near the end of S have the most keys) across the group's heads, so the
# short ones fill the tail; neighbouring heads share K and V under GQA and in L2.
# Variants, picked per call (the AK_LAUNCH mapping at the end):
#   d64, d128  fp16/bf16 with D <= 64 or D <= 128 (the head dim padded to BLOCK_D: the copies fill
#              it with zeros), when scale > 1e-30 (c > 0 in fp32); K and V by TMA
#   general    fp16/bf16, D <= 128, a scale <= 0: pointer loads with 64-bit row offsets and
#              masks, the max taken over the scaled scores
#   ieee       fp32, D <= 128, as general: 32 x 32 blocks, unpipelined (it compiles in half the time)
# All need 16-byte aligned bases and D and the strides multiples of 16 (TMA, vector and async
# copies; every contiguous q, k, v with D a multiple of 16): other calls are unsupported.
#
# Tuning parameters (module-level values below; the engine sets them; fp32 keeps its own):
#   BLOCK_M     queries per program (a multiple of BLOCK_N)
#   BLOCK_N     keys per step
#   NUM_WARPS   warps per program
#   NUM_STAGES  key/value blocks in flight (the copies of step i + NUM_STAGES - 1 are issued at
#               the end of step i: 2 stages barely overlap them)
#   HEAD_GROUP  (batch, head)s whose query blocks interleave in the launch order
# Default, for D 128 on H100 (sm_90a, Triton 3.6's ptxas): 128 x 128 blocks, 8 warps, 3 stages:
# 255 registers and no spills, 224 KiB of shared memory (counted with pointer loads: ~500
# instructions a warp a step, the 128 x 64 blocks ~335 for half the keys). 4 warps with 128-row
# blocks spill (last @require).
#
# @tune BLOCK_M: 64, 128, 256
# @tune BLOCK_N: 32, 64, 128
# @tune NUM_WARPS: 4, 8
# @tune NUM_STAGES: 1, 2, 3, 4
# @tune HEAD_GROUP: 1, 2, 4, 8
# @require BLOCK_M % BLOCK_N == 0
# @require BLOCK_M / (16 * NUM_WARPS) >= 1
# @require NUM_STAGES * BLOCK_N * 128 * 2 * 2 + BLOCK_M * 128 * 2 <= 227 * 1024
# @require BLOCK_M * (BLOCK_N + 128) / (32 * NUM_WARPS) <= 160
import triton
import triton.language as tl

BLOCK_M = 128
BLOCK_N = 128
NUM_WARPS = 8
NUM_STAGES = 3
HEAD_GROUP = 4

LOG2E = 1.4426950408889634


@triton.jit
def _load_block(source, stride, start, keys, dims, seq_len, head_dim, MASKED: tl.constexpr, GENERAL: tl.constexpr):
    # Keys start .. start + BLOCK_N of K or V. Fast variants: a TMA copy through the head's tensor
    # descriptor, rows past S and columns past D filled with zeros by the copy itself. General:
    # `source` is the head's base, rows in 64 bits and masked.
    if not GENERAL:
        block = source.load([start, 0])
    else:
        if MASKED:
            mask = ((start + keys)[:, None] < seq_len) & (dims[None, :] < head_dim)
        else:
            mask = dims[None, :] < head_dim  # loop-invariant: one predicate per copy, hoisted
        block = tl.load(source + (start + keys)[:, None].to(tl.int64) * stride + dims[None, :], mask=mask,
                        other=0.0)
    return block


@triton.jit
def _attend(acc, running_max, total, q, k_source, v_source, k_stride, v_stride, start, keys, dims, limit, seq_len,
            head_dim, qk_scale, MASKED: tl.constexpr, GENERAL: tl.constexpr):
    k = _load_block(k_source, k_stride, start, keys, dims, seq_len, head_dim, MASKED, GENERAL)
    v = _load_block(v_source, v_stride, start, keys, dims, seq_len, head_dim, MASKED, GENERAL)
    scores = tl.dot(q, tl.trans(k), input_precision="ieee" if q.dtype == tl.float32 else None)
    if GENERAL:
        scores = scores * qk_scale
    if MASKED:
        scores = tl.where((start + keys)[None, :] <= limit[:, None], scores, -float("inf"))
    # Every row has seen a visible key before a fully masked block (key blocks run in order), so
    # new_max is finite and no -inf - -inf arises.
    if GENERAL:
        new_max = tl.maximum(running_max, tl.max(scores, axis=1))
        p = tl.exp2(scores - new_max[:, None])
    else:  # qk_scale > 0: the max commutes with it, and the scaling joins the subtraction
        new_max = tl.maximum(running_max, tl.max(scores, axis=1) * qk_scale)
        p = tl.exp2(scores * qk_scale - new_max[:, None])
    rescale = tl.exp2(running_max - new_max)
    total = total * rescale + tl.sum(p, axis=1)
    acc = acc * rescale[:, None]
    acc = tl.dot(p.to(v.dtype), v, acc, input_precision="ieee" if v.dtype == tl.float32 else None)
    return acc, new_max, total


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, head_dim, heads, group, batch_heads,
                     q_stride_b, q_stride_h, q_stride_s, k_stride_b, k_stride_h, k_stride_s,
                     v_stride_b, v_stride_h, v_stride_s, o_stride_b, o_stride_h, o_stride_s, qk_scale, causal,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                     HEAD_GROUP: tl.constexpr, GENERAL: tl.constexpr):
    query_blocks = tl.cdiv(seq_len, BLOCK_M)
    pid = tl.program_id(0)
    first_head = pid // (HEAD_GROUP * query_blocks) * HEAD_GROUP
    in_group = pid % (HEAD_GROUP * query_blocks)
    group_size = tl.minimum(HEAD_GROUP, batch_heads - first_head)
    query_block = query_blocks - 1 - in_group // group_size
    batch_head = first_head + in_group % group_size
    batch = (batch_head // heads).to(tl.int64)
    head = (batch_head % heads).to(tl.int64)
    kv_head = head // group
    rows = query_block * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    keys = tl.arange(0, BLOCK_N)
    q_block = q_ptr + batch * q_stride_b + head * q_stride_h + rows[:, None].to(tl.int64) * q_stride_s + dims[None, :]
    q = tl.load(q_block, mask=(rows[:, None] < seq_len) & (dims[None, :] < head_dim), other=0.0)
    k_source = k_ptr + batch * k_stride_b + kv_head * k_stride_h
    v_source = v_ptr + batch * v_stride_b + kv_head * v_stride_h
    if not GENERAL:  # written to this program's slice of the global scratch
        k_source = tl.make_tensor_descriptor(k_source, shape=[seq_len, head_dim], strides=[k_stride_s, 1],
                                             block_shape=[BLOCK_N, BLOCK_D])
        v_source = tl.make_tensor_descriptor(v_source, shape=[seq_len, head_dim], strides=[v_stride_s, 1],
                                             block_shape=[BLOCK_N, BLOCK_D])
    # The last visible key of each row in the masked blocks.
    limit = tl.where(causal != 0, rows, seq_len - 1)

    running_max = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    total = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    whole_end = tl.where(causal != 0, query_block * BLOCK_M, (seq_len // BLOCK_N) * BLOCK_N)
    for start in range(0, whole_end, BLOCK_N):
        acc, running_max, total = _attend(acc, running_max, total, q, k_source, v_source, k_stride_s, v_stride_s,
                                          start, keys, dims, limit, seq_len, head_dim, qk_scale, False, GENERAL)
    end = tl.where(causal != 0, tl.minimum((query_block + 1) * BLOCK_M, seq_len), seq_len)
    for start in range(whole_end, end, BLOCK_N):
        acc, running_max, total = _attend(acc, running_max, total, q, k_source, v_source, k_stride_s, v_stride_s,
                                          start, keys, dims, limit, seq_len, head_dim, qk_scale, True, GENERAL)
    out = acc / total[:, None]
    o_block = o_ptr + batch * o_stride_b + head * o_stride_h + rows[:, None].to(tl.int64) * o_stride_s + dims[None, :]
    tl.store(o_block, out.to(o_ptr.dtype.element_ty), mask=(rows[:, None] < seq_len) & (dims[None, :] < head_dim))


def _launch(dtypes, when, max_d, general, block_m, block_n, num_warps, num_stages):
    return {
        "kernel": attention_kernel,
        "when": when,
        "dtypes": dtypes,
        "grid": ("cdiv(S, BLOCK_M) * B * H",),
        "args": {"q_ptr": "q", "k_ptr": "k", "v_ptr": "v", "o_ptr": "o", "seq_len": "S", "head_dim": "D",
                 "heads": "H", "group": "H // HKV", "batch_heads": "B * H",
                 "q_stride_b": "q.stride[0]", "q_stride_h": "q.stride[1]", "q_stride_s": "q.stride[2]",
                 "k_stride_b": "k.stride[0]", "k_stride_h": "k.stride[1]", "k_stride_s": "k.stride[2]",
                 "v_stride_b": "v.stride[0]", "v_stride_h": "v.stride[1]", "v_stride_s": "v.stride[2]",
                 "o_stride_b": "o.stride[0]", "o_stride_h": "o.stride[1]", "o_stride_s": "o.stride[2]",
                 "qk_scale": f"scale * {LOG2E}", "causal": "causal != 0"},
        "constexprs": {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_D": max_d, "HEAD_GROUP": HEAD_GROUP,
                       "GENERAL": general},
        "num_warps": num_warps,
        "num_stages": num_stages,
        "aligned": ["q_ptr", "k_ptr", "v_ptr", "o_ptr", "head_dim", "q_stride_b", "q_stride_h", "q_stride_s",
                    "k_stride_b", "k_stride_h", "k_stride_s", "v_stride_b", "v_stride_h", "v_stride_s",
                    "o_stride_b", "o_stride_h", "o_stride_s"],
        "unaligned": False,
    }


FAST = "scale > 1e-30"
AK_LAUNCH = {
    "inputs": {"q": "T", "k": "T", "v": "T"},
    "outputs": {"o": "T"},
    "scalars": ["scale", "causal"],
    "dims": {"B": "q.shape[0]", "H": "q.shape[1]", "S": "q.shape[2]", "D": "q.shape[3]", "HKV": "k.shape[1]"},
    "require": ["H % HKV == 0", "k.shape[2] == S", "v.shape[2] == S", "k.shape[3] == D", "v.shape[3] == D",
                "v.shape[1] == HKV", "o.shape[1] == H", "o.shape[2] == S", "o.shape[3] == D",
                "q.stride[3] == 1", "k.stride[3] == 1", "v.stride[3] == 1", "o.stride[3] == 1"],
    "launches": [[
        _launch(["fp16", "bf16"], f"D <= 64 and {FAST}", 64, False, BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES),
        _launch(["fp16", "bf16"], f"D <= 128 and {FAST}", 128, False, BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES),
        _launch(["fp16", "bf16"], "D <= 128", 128, True, BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES),
        _launch(["fp32"], "D <= 128", 128, True, 32, 32, 4, 1),
    ]],
}
