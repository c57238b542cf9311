# layernorm, Triton: y[r, :] = (x[r, :] - mean_r) / sqrt(var_r + eps) * weight + bias, with the
# biased variance over the last dim (as torch.nn.LayerNorm).
# Inputs x[M, N], weight[N], bias[N]; output y[M, N] of x's dtype; scalars[0] = eps. fp16, bf16
# and fp32 (fp32 stays fp32), any M, N >= 1; inner strides 1, row strides free.
#
# One program per row, sums in fp32. The variance is two-pass: a first mean m0, then sum(d) and
# sum(d^2) for d = x - m0 (E[x^2] - E[x]^2 cancels to noise on rows with a small variance around a
# large mean); sum(d) / N corrects m0's rounding.
# Variants, picked per call (the AK_LAUNCH mapping at the end):
#   row      N <= BLOCK_N: the row is read once into registers and written once.
#   chunked  longer rows: BLOCK_N-wide chunks, three reads of the row (mean, variance, write; the
#            second and third mostly from L2).
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


@triton.jit
def layernorm_row(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean0 = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean0, 0.0)
    shift = tl.sum(d, axis=0) / n_cols
    variance = tl.maximum(tl.sum(d * d, axis=0) / n_cols - shift * shift, 0.0)
    inv_std = tl.rsqrt(variance + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = (d - shift) * inv_std * w + b
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layernorm_chunked(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, eps,
                      BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    sums = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        sums += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean0 = tl.sum(sums, axis=0) / n_cols
    shifts = tl.zeros([BLOCK_N], dtype=tl.float32)
    squares = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        d = tl.where(mask, tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32) - mean0, 0.0)
        shifts += d
        squares += d * d
    shift = tl.sum(shifts, axis=0) / n_cols
    variance = tl.maximum(tl.sum(squares, axis=0) / n_cols - shift * shift, 0.0)
    inv_std = tl.rsqrt(variance + eps)
    mean = mean0 + shift
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, ((x - mean) * inv_std * w + b).to(y_ptr.dtype.element_ty), mask=mask)


def _launch(kernel, when):
    return {
        "kernel": kernel,
        "when": when,
        "grid": ("M",),
        "args": {"x_ptr": "x", "w_ptr": "weight", "b_ptr": "bias", "y_ptr": "y", "n_cols": "N",
                 "x_row_stride": "x.stride[0]", "y_row_stride": "y.stride[0]", "eps": "eps"},
        "constexprs": {"BLOCK_N": BLOCK_N},
        "num_warps": NUM_WARPS,
        "num_stages": 1,
        "aligned": ["x_ptr", "w_ptr", "b_ptr", "y_ptr", "n_cols", "x_row_stride", "y_row_stride"],
    }


AK_LAUNCH = {
    "inputs": {"x": "T", "weight": "T", "bias": "T"},
    "outputs": {"y": "T"},
    "scalars": ["eps"],
    "dims": {"M": "x.shape[0]", "N": "x.shape[1]"},
    "require": ["x.stride[1] == 1", "y.stride[1] == 1", "weight.stride[0] == 1", "bias.stride[0] == 1",
                "y.shape[0] == M", "y.shape[1] == N", "weight.shape[0] == N", "bias.shape[0] == N"],
    "launches": [[_launch(layernorm_row, "N <= BLOCK_N"), _launch(layernorm_chunked, "N > BLOCK_N")]],
}
