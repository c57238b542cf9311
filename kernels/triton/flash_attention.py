# flash_attention, Triton: o[b, h, i] = sum_j softmax_j(scale * q[b, h, i] . k[b, g, j]) v[b, g, j],
# g = h / (H / Hkv) (grouped-query attention), keys j > i masked out when causal.
# Inputs q[B, H, S, D], k[B, Hkv, S, D], v[B, Hkv, S, D]; output o[B, H, S, D]; scalars[0] =
# scale, scalars[1] = causal (0 or 1, read at run time: one build serves both). fp16, bf16 and
# fp32 (fp32 stays fp32: tl.dot at IEEE precision), any B, H, S >= 1, D <= 128; inner strides 1.
#
# A program owns BLOCK_M queries of one (batch, head) and streams the keys and values in
# BLOCK_N blocks through tl.dot, with the online softmax in fp32 (exp2 of scores pre-scaled by
# scale * log2(e)): a running max, a running sum and an accumulator rescaled when the max moves.
# Key blocks wholly visible (wholly below the diagonal, or wholly inside S) take a loop without
# masks; the blocks that cross the diagonal or the end of S take a masked one. Causal programs
# are launched longest first (the query blocks near the end of S have the most keys).
# Variants, picked per call (the AK_LAUNCH mapping at the end):
#   d64, d128  fp16/bf16 with D <= 64 or D <= 128 (the head dim padded to BLOCK_D, masked)
#   ieee       fp32, D <= 128: 32 x 32 blocks, unpipelined (it compiles in half the time)
# All need 16-byte aligned bases and D and the strides multiples of 16 (vector and async
# copies; every contiguous q, k, v with D a multiple of 16): other calls are unsupported.
#
# Tuning parameters (module-level values below; the engine sets them; fp32 keeps its own):
#   BLOCK_M     queries per program (a multiple of BLOCK_N)
#   BLOCK_N     keys per step
#   NUM_WARPS   warps per program
#   NUM_STAGES  key/value blocks in flight
#
# @tune BLOCK_M: 64, 128, 256
# @tune BLOCK_N: 32, 64, 128
# @tune NUM_WARPS: 4, 8
# @tune NUM_STAGES: 1, 2, 3, 4
# @require BLOCK_M % BLOCK_N == 0
# @require BLOCK_M / (16 * NUM_WARPS) >= 1
# @require NUM_STAGES * BLOCK_N * 128 * 2 * 2 + BLOCK_M * 128 * 2 <= 200 * 1024
import triton
import triton.language as tl

BLOCK_M = 128
BLOCK_N = 64
NUM_WARPS = 8
NUM_STAGES = 3

LOG2E = 1.4426950408889634


@triton.jit
def _attend(acc, running_max, total, q, k_block, v_block, key_start, rows, seq_len, head_dim, qk_scale,
            causal, MASKED: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    keys = key_start + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, BLOCK_D)
    if MASKED:
        mask = (keys[:, None] < seq_len) & (dims[None, :] < head_dim)
        k = tl.load(k_block, mask=mask, other=0.0)
        v = tl.load(v_block, mask=mask, other=0.0)
    else:
        k = tl.load(k_block, mask=dims[None, :] < head_dim, other=0.0)
        v = tl.load(v_block, mask=dims[None, :] < head_dim, other=0.0)
    scores = tl.dot(q, tl.trans(k), input_precision="ieee" if q.dtype == tl.float32 else None) * qk_scale
    if MASKED:
        visible = (keys[None, :] < seq_len) & ((causal == 0) | (keys[None, :] <= rows[:, None]))
        scores = tl.where(visible, scores, -float("inf"))
    new_max = tl.maximum(running_max, tl.max(scores, axis=1))
    p = tl.exp2(scores - new_max[:, None])
    rescale = tl.exp2(running_max - new_max)
    total = total * rescale + tl.sum(p, axis=1)
    acc = acc * rescale[:, None]
    acc = tl.dot(p.to(v.dtype), v, acc, input_precision="ieee" if v.dtype == tl.float32 else None)
    return acc, new_max, total


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, head_dim, heads, group,
                     q_stride_b, q_stride_h, q_stride_s, k_stride_b, k_stride_h, k_stride_s,
                     v_stride_b, v_stride_h, v_stride_s, o_stride_b, o_stride_h, o_stride_s, qk_scale, causal,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    query_block = tl.num_programs(0) - 1 - tl.program_id(0)  # longest first under a causal mask
    batch_head = tl.program_id(1)
    batch = (batch_head // heads).to(tl.int64)
    head = (batch_head % heads).to(tl.int64)
    kv_head = head // group
    rows = query_block * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    q_block = q_ptr + batch * q_stride_b + head * q_stride_h + rows[:, None].to(tl.int64) * q_stride_s + dims[None, :]
    q = tl.load(q_block, mask=(rows[:, None] < seq_len) & (dims[None, :] < head_dim), other=0.0)
    k_base = k_ptr + batch * k_stride_b + kv_head * k_stride_h
    v_base = v_ptr + batch * v_stride_b + kv_head * v_stride_h
    keys = tl.arange(0, BLOCK_N)

    running_max = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    total = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    # Unmasked: key blocks before this query block (causal), or every whole block (not causal).
    whole_end = tl.where(causal != 0, query_block * BLOCK_M, (seq_len // BLOCK_N) * BLOCK_N)
    for start in range(0, whole_end, BLOCK_N):
        k_block = k_base + (start + keys[:, None]).to(tl.int64) * k_stride_s + dims[None, :]
        v_block = v_base + (start + keys[:, None]).to(tl.int64) * v_stride_s + dims[None, :]
        acc, running_max, total = _attend(acc, running_max, total, q, k_block, v_block, start, rows, seq_len,
                                          head_dim, qk_scale, causal, False, BLOCK_N, BLOCK_D)
    # Masked: the diagonal blocks (causal) or the last partial block.
    end = tl.where(causal != 0, tl.minimum((query_block + 1) * BLOCK_M, seq_len), seq_len)
    for start in range(whole_end, end, BLOCK_N):
        k_block = k_base + (start + keys[:, None]).to(tl.int64) * k_stride_s + dims[None, :]
        v_block = v_base + (start + keys[:, None]).to(tl.int64) * v_stride_s + dims[None, :]
        acc, running_max, total = _attend(acc, running_max, total, q, k_block, v_block, start, rows, seq_len,
                                          head_dim, qk_scale, causal, True, BLOCK_N, BLOCK_D)
    out = acc / total[:, None]
    o_block = o_ptr + batch * o_stride_b + head * o_stride_h + rows[:, None].to(tl.int64) * o_stride_s + dims[None, :]
    tl.store(o_block, out.to(o_ptr.dtype.element_ty), mask=(rows[:, None] < seq_len) & (dims[None, :] < head_dim))


def _launch(dtypes, max_d, block_m, block_n, num_warps, num_stages):
    return {
        "kernel": attention_kernel,
        "when": f"D <= {max_d}",
        "dtypes": dtypes,
        "grid": ("cdiv(S, BLOCK_M)", "B * H"),
        "args": {"q_ptr": "q", "k_ptr": "k", "v_ptr": "v", "o_ptr": "o", "seq_len": "S", "head_dim": "D",
                 "heads": "H", "group": "H // HKV",
                 "q_stride_b": "q.stride[0]", "q_stride_h": "q.stride[1]", "q_stride_s": "q.stride[2]",
                 "k_stride_b": "k.stride[0]", "k_stride_h": "k.stride[1]", "k_stride_s": "k.stride[2]",
                 "v_stride_b": "v.stride[0]", "v_stride_h": "v.stride[1]", "v_stride_s": "v.stride[2]",
                 "o_stride_b": "o.stride[0]", "o_stride_h": "o.stride[1]", "o_stride_s": "o.stride[2]",
                 "qk_scale": f"scale * {LOG2E}", "causal": "causal != 0"},
        "constexprs": {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_D": max_d},
        "num_warps": num_warps,
        "num_stages": num_stages,
        "aligned": ["q_ptr", "k_ptr", "v_ptr", "o_ptr", "head_dim", "q_stride_b", "q_stride_h", "q_stride_s",
                    "k_stride_b", "k_stride_h", "k_stride_s", "v_stride_b", "v_stride_h", "v_stride_s",
                    "o_stride_b", "o_stride_h", "o_stride_s"],
        "unaligned": False,
    }


AK_LAUNCH = {
    "inputs": {"q": "T", "k": "T", "v": "T"},
    "outputs": {"o": "T"},
    "scalars": ["scale", "causal"],
    "dims": {"B": "q.shape[0]", "H": "q.shape[1]", "S": "q.shape[2]", "D": "q.shape[3]", "HKV": "k.shape[1]"},
    "require": ["H % HKV == 0", "k.shape[2] == S", "v.shape[2] == S", "k.shape[3] == D", "v.shape[3] == D",
                "v.shape[1] == HKV", "o.shape[1] == H", "o.shape[2] == S", "o.shape[3] == D",
                "q.stride[3] == 1", "k.stride[3] == 1", "v.stride[3] == 1", "o.stride[3] == 1"],
    "launches": [[
        _launch(["fp16", "bf16"], 64, BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES),
        _launch(["fp16", "bf16"], 128, BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES),
        _launch(["fp32"], 128, 32, 32, 4, 1),
    ]],
}
