# reduce, Triton: y[r] = sum_j x[r, j] (sum over the last dim).
# Input x[M, N]; output y[M] of x's dtype; no scalars. fp16, bf16 and fp32 (fp32 stays fp32), any
# M, N >= 1; the inner stride of x is 1, its row stride and y's stride are free.
#
# A program sums BLOCK_M rows: it walks them in BLOCK_M x BLOCK_N tiles, adding each into an fp32
# tile of partial sums (no reduction inside the loop, so loads of the next tile issue freely),
# and reduces the tile across its columns once at the end, in a fixed order: repeated runs are
# bitwise equal. Short rows take several rows per program; long ones want BLOCK_M = 1.
# Built twice: assuming 16-byte aligned x and N and a row stride that are multiples of 16
# (vector loads), and without (odd N, misaligned views).
#
# Tuning parameters (module-level values below; the engine sets them):
#   BLOCK_M     rows per program
#   BLOCK_N     columns per tile (a power of two)
#   NUM_WARPS   warps per program
#   NUM_STAGES  tiles in flight (above 1, Triton pipelines the loop's loads through shared memory)
#
# @tune BLOCK_M: 1, 2, 4, 8, 16
# @tune BLOCK_N: 256, 512, 1024, 2048, 4096
# @tune NUM_WARPS: 2, 4, 8, 16
# @tune NUM_STAGES: 1, 2, 3
# @require BLOCK_M * BLOCK_N / (32 * NUM_WARPS) >= 4 && BLOCK_M * BLOCK_N / (32 * NUM_WARPS) <= 64
import triton
import triton.language as tl

BLOCK_M = 1
BLOCK_N = 2048
NUM_WARPS = 4
NUM_STAGES = 1


@triton.jit
def row_sums(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    x_rows = x_ptr + rows[:, None] * x_row_stride
    partial = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        partial += tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    total = tl.sum(partial, axis=1)
    tl.store(y_ptr + rows * y_stride, total.to(y_ptr.dtype.element_ty), mask=row_mask)


AK_LAUNCH = {
    "inputs": {"x": "T"},
    "outputs": {"y": "T"},
    "dims": {"M": "x.shape[0]", "N": "x.shape[1]"},
    "require": ["x.stride[1] == 1", "y.shape[0] == M"],
    "launches": [{
        "kernel": row_sums,
        "grid": ("cdiv(M, BLOCK_M)",),
        "args": {"x_ptr": "x", "y_ptr": "y", "n_rows": "M", "n_cols": "N", "x_row_stride": "x.stride[0]",
                 "y_stride": "y.stride[0]"},
        "constexprs": {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N},
        "num_warps": NUM_WARPS,
        "num_stages": NUM_STAGES,
        "aligned": ["x_ptr", "n_cols", "x_row_stride"],
    }],
}
