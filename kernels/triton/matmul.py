# matmul, Triton: C[i, j] = sum_k A[i, k] * B[k, j], fp32 accumulation, C rounded once.
# Inputs A[M, K], B[K, N] (row-major, inner strides 1, row strides free; or B the transposed view
# of an [N, K] buffer, a Linear's weight: strides (1, ldb), problem param b_nk = 1); output
# C[M, N] of A's dtype; no scalars. fp16, bf16 and fp32 (fp32 stays fp32: tl.dot at IEEE precision, never
# TF32), any M, N, K >= 1.
#
# One program computes a BLOCK_M x BLOCK_N tile of C, walking K in BLOCK_K steps through
# tl.dot (tensor cores for fp16/bf16: wgmma on sm_90, pipelined NUM_STAGES deep by Triton).
# Programs walk the tiles in groups of GROUP_M tile rows, so that the programs running at once
# share A's rows and B's columns in L2. Loads past the edges are masked to zero; no split-K, so
# repeated runs are bitwise equal.
# Variants, picked per call (the AK_LAUNCH mapping at the end), each for either layout of B (B_NK:
# B's tiles read k-contiguous from the [N, K] buffer, which tl.dot takes as they come):
#   tma     (TMA = 1 only) fp16/bf16 with the tuned tile, tiles by TMA, for calls with 16-byte
#           aligned bases and row strides multiples of 16; edges come as zeros from the copies.
#   tensor  fp16/bf16 with the tuned tile; built twice: assuming 16-byte aligned bases and M, N,
#           K and the row strides multiples of 16 (vector and async copies), and without.
#   ieee    fp32: a 64 x 64 x 32 tile of FMA products (IEEE precision), both builds too.
#
# Tuning parameters (module-level values below; the engine sets them; fp32 keeps its own):
#   BLOCK_M, BLOCK_N  output tile of a program
#   BLOCK_K           k-depth of a step
#   GROUP_M           tile rows per group of the launch order
#   NUM_WARPS         warps per program
#   NUM_STAGES        k-steps in flight
#   TMA               1: calls with 16-byte aligned bases and row strides that are multiples of 16
#                     read their tiles by TMA (tensor descriptors made on the device, in Triton's
#                     global scratch), as flash_attention and fused_mlp do; other calls take the
#                     pointer variants. 0 (the default): pointers only, the configuration timed at
#                     190.0 us for 4096^3 fp16 on the H100, about 0.98x cuBLAS (docs/benchmarks.md,
#                     fourth session); TMA is not timed on this kernel yet.
#
# @tune BLOCK_M: 64, 128, 256
# @tune BLOCK_N: 64, 128, 256
# @tune BLOCK_K: 32, 64, 128
# @tune GROUP_M: 1, 4, 8, 16
# @tune NUM_WARPS: 4, 8
# @tune NUM_STAGES: 2, 3, 4, 5
# @tune TMA: 0, 1
# @require NUM_STAGES * (BLOCK_M + BLOCK_N) * BLOCK_K * 2 <= 200 * 1024
# @require BLOCK_M * BLOCK_N / (32 * NUM_WARPS) <= 256
# @require BLOCK_M * BLOCK_N >= 64 * 128 || NUM_WARPS == 4
import triton
import triton.language as tl

BLOCK_M = 128
BLOCK_N = 256
BLOCK_K = 64
GROUP_M = 8
NUM_WARPS = 8
NUM_STAGES = 3
TMA = 0


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, a_row_stride, b_stride, c_row_stride,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  B_NK: tl.constexpr, TMA: tl.constexpr):
    # b_stride: B's stride that is not 1 (between k rows of a [K, N] B; between n rows with B_NK).
    # Tile order: groups of GROUP_M tile rows, column by column within a group.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * tiles_n
    first_m = (pid // group_size) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % group_size) % rows_in_group
    tile_n = (pid % group_size) // rows_in_group

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    if TMA:  # descriptors in this program's slice of the global scratch; edges come as zeros
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[a_row_stride, 1],
                                           block_shape=[BLOCK_M, BLOCK_K])
        if B_NK:
            b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[b_stride, 1],
                                               block_shape=[BLOCK_N, BLOCK_K])
        else:
            b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[b_stride, 1],
                                               block_shape=[BLOCK_K, BLOCK_N])
        for k in range(0, K, BLOCK_K):
            a = a_desc.load([tile_m * BLOCK_M, k])
            if B_NK:
                b = b_desc.load([tile_n * BLOCK_N, k]).T
            else:
                b = b_desc.load([k, tile_n * BLOCK_N])
            acc = tl.dot(a, b, acc, input_precision="ieee" if a.dtype == tl.float32 else None)
    else:
        ks = tl.arange(0, BLOCK_K)
        a_tile = a_ptr + rows[:, None].to(tl.int64) * a_row_stride + ks[None, :]
        if B_NK:
            b_tile = b_ptr + cols[None, :].to(tl.int64) * b_stride + ks[:, None]
            b_step = BLOCK_K
        else:
            b_tile = b_ptr + ks[:, None].to(tl.int64) * b_stride + cols[None, :]
            b_step = BLOCK_K * b_stride
        for k in range(0, K, BLOCK_K):
            a = tl.load(a_tile, mask=(rows[:, None] < M) & (ks[None, :] < K - k), other=0.0)
            b = tl.load(b_tile, mask=(ks[:, None] < K - k) & (cols[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc, input_precision="ieee" if a.dtype == tl.float32 else None)
            a_tile += BLOCK_K
            b_tile += b_step
    c = c_ptr + rows[:, None].to(tl.int64) * c_row_stride + cols[None, :]
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


def _launch(dtypes, b_nk, block_m, block_n, block_k, group_m, num_warps, num_stages, tma=False):
    pointers = ["a_ptr", "b_ptr", "c_ptr", "a_row_stride", "b_stride", "c_row_stride"]
    return {
        "kernel": matmul_kernel,
        "when": "B.stride[0] == 1" if b_nk else "B.stride[1] == 1",
        "dtypes": dtypes,
        "grid": ("cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)",),
        "args": {"a_ptr": "A", "b_ptr": "B", "c_ptr": "C", "M": "M", "N": "N", "K": "K",
                 "a_row_stride": "A.stride[0]", "b_stride": "B.stride[1]" if b_nk else "B.stride[0]",
                 "c_row_stride": "C.stride[0]"},
        "constexprs": {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k, "GROUP_M": group_m,
                       "B_NK": int(b_nk), "TMA": int(tma)},
        "num_warps": num_warps,
        "num_stages": num_stages,
        "aligned": pointers if tma else pointers + ["M", "N", "K"],
        "unaligned": not tma,
    }


AK_LAUNCH = {
    "inputs": {"A": "T", "B": "T"},
    "outputs": {"C": "T"},
    "dims": {"M": "A.shape[0]", "K": "A.shape[1]", "N": "B.shape[1]"},
    "require": ["B.shape[0] == K", "C.shape[0] == M", "C.shape[1] == N",
                "A.stride[1] == 1", "B.stride[1] == 1 or B.stride[0] == 1", "C.stride[1] == 1"],
    "launches": [[
        _launch(["fp16", "bf16"], b_nk, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_WARPS, NUM_STAGES, tma)
        if dtypes == "16" else _launch(["fp32"], b_nk, 64, 64, 32, 8, 4, 2)
        for b_nk in (False, True) for dtypes, tma in ([("16", True)] if TMA else []) + [("16", False), ("32", False)]
    ]],
}
