# softmax, Triton: y[r, j] = exp(x[r, j] - max_r) / sum_k exp(x[r, k] - max_r), over the last dim.
# Input x[M, N]; output y[M, N] of x's dtype; no scalars. fp16, bf16 and fp32 (fp32 stays fp32),
# any M, N >= 1; inner strides 1, row strides free.
#
# One program per row; max, exponentials and the sum in fp32 (exp2 of pre-scaled values).
# Variants, picked per call (the AK_LAUNCH mapping at the end):
#   row      N <= BLOCK_N: the row is read once into registers and written once.
#   chunked  longer rows: an online pass over BLOCK_N-wide chunks keeps the running max and the
#            sum rescaled to it; a second pass reads the row again (from L2) and writes it.
# Each is built twice: assuming 16-byte aligned pointers and N and row strides that are
# multiples of 16 (vector loads), and without (odd N, misaligned views).
#
# Tuning parameters (module-level values below; the engine sets them):
#   BLOCK_N     columns a program holds at once (a power of two)
#   NUM_WARPS   warps per program
#
# @tune BLOCK_N: 1024, 2048, 4096, 8192, 16384
# @tune NUM_WARPS: 2, 4, 8, 16, 32
# @require BLOCK_N / (32 * NUM_WARPS) >= 2 && BLOCK_N / (32 * NUM_WARPS) <= 64
import triton
import triton.language as tl

BLOCK_N = 8192
NUM_WARPS = 16

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def softmax_row(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp2((x - tl.max(x, axis=0)) * LOG2E)
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_chunked(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    # Every chunk holds at least one element, so its max is finite and the rescale never sees
    # (-inf) - (-inf).
    running_max = -float("inf")
    total = 0.0
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        total = total * tl.exp2((running_max - new_max) * LOG2E) + tl.sum(tl.exp2((x - new_max) * LOG2E), axis=0)
        running_max = new_max
    inv_total = 1.0 / total
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp2((x - running_max) * LOG2E) * inv_total
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(kernel, when):
    return {
        "kernel": kernel,
        "when": when,
        "grid": ("M",),
        "args": {"x_ptr": "x", "y_ptr": "y", "n_cols": "N", "x_row_stride": "x.stride[0]",
                 "y_row_stride": "y.stride[0]"},
        "constexprs": {"BLOCK_N": BLOCK_N},
        "num_warps": NUM_WARPS,
        "num_stages": 1,
        "aligned": ["x_ptr", "y_ptr", "n_cols", "x_row_stride", "y_row_stride"],
    }


AK_LAUNCH = {
    "inputs": {"x": "T"},
    "outputs": {"y": "T"},
    "dims": {"M": "x.shape[0]", "N": "x.shape[1]"},
    "require": ["x.stride[1] == 1", "y.stride[1] == 1", "y.shape[0] == M", "y.shape[1] == N"],
    "launches": [[_launch(softmax_row, "N <= BLOCK_N"), _launch(softmax_chunked, "N > BLOCK_N")]],
}
