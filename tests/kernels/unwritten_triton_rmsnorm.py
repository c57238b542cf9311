# A deliberately incomplete Triton rmsnorm for the harness's tests (tests/gpu/test_triton_harness.cpp):
# right arithmetic, but it never writes the last column of a row, so every element it writes
# matches the reference and only the poisoned-output check can tell. The harness must reject it.
# @tune NUM_WARPS: 4, 8
import triton
import triton.language as tl

NUM_WARPS = 4


@triton.jit
def rmsnorm_but_last(x_ptr, w_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    squares = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        squares += x * x
    inv_rms = tl.rsqrt(tl.sum(squares, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols - 1
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * y_row_stride + cols, (x * inv_rms * w).to(y_ptr.dtype.element_ty), mask=mask)


AK_LAUNCH = {
    "inputs": {"x": "T", "weight": "T"},
    "outputs": {"y": "T"},
    "scalars": ["eps"],
    "require": ["x.stride[1] == 1", "y.stride[1] == 1", "weight.stride[0] == 1"],
    "launches": [{
        "kernel": rmsnorm_but_last,
        "grid": ("x.shape[0]",),
        "args": {"x_ptr": "x", "w_ptr": "weight", "y_ptr": "y", "n_cols": "x.shape[1]",
                 "x_row_stride": "x.stride[0]", "y_row_stride": "y.stride[0]", "eps": "eps"},
        "constexprs": {"BLOCK_N": 1024},
        "num_warps": NUM_WARPS,
        "num_stages": 1,
    }],
}
