# rmsnorm, Triton: y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight
# Inputs x[M, N], weight[N]; output y[M, N] of x's dtype; scalars[0] = eps. fp16, bf16 and fp32
# (fp32 stays fp32), any M, N >= 1; inner strides 1, row strides free.
#
# One program normalizes one row; squares are summed in fp32.
# Variants, picked per call (the AK_LAUNCH mapping at the end):
#   row      N <= BLOCK_N: the row is loaded once into registers, reduced, scaled and stored.
#   chunked  longer rows: a pass of BLOCK_N-wide chunks sums the squares, a second pass reads
#            the row again (from L2) and writes it.
# Each is built twice: assuming 16-byte aligned pointers and N and row strides that are
# multiples of 16 (vector loads; the usual case), and without (odd N, misaligned views).
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


@triton.jit
def rmsnorm_row(x_ptr, w_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * y_row_stride + cols, (x * inv_rms * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_chunked(x_ptr, w_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    squares = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        squares += x * x
    inv_rms = tl.rsqrt(tl.sum(squares, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (x * inv_rms * w).to(y_ptr.dtype.element_ty), mask=mask)


def _launch(kernel, when):
    return {
        "kernel": kernel,
        "when": when,
        "grid": ("M",),
        "args": {"x_ptr": "x", "w_ptr": "weight", "y_ptr": "y", "n_cols": "N",
                 "x_row_stride": "x.stride[0]", "y_row_stride": "y.stride[0]", "eps": "eps"},
        "constexprs": {"BLOCK_N": BLOCK_N},
        "num_warps": NUM_WARPS,
        "num_stages": 1,
        "aligned": ["x_ptr", "w_ptr", "y_ptr", "n_cols", "x_row_stride", "y_row_stride"],
    }


AK_LAUNCH = {
    "inputs": {"x": "T", "weight": "T"},
    "outputs": {"y": "T"},
    "scalars": ["eps"],
    "dims": {"M": "x.shape[0]", "N": "x.shape[1]"},
    "require": ["x.stride[1] == 1", "y.stride[1] == 1", "weight.stride[0] == 1",
                "y.shape[0] == M", "y.shape[1] == N", "weight.shape[0] == N"],
    "launches": [[_launch(rmsnorm_row, "N <= BLOCK_N"), _launch(rmsnorm_chunked, "N > BLOCK_N")]],
}
