# A deliberately wrong Triton rmsnorm for the harness's tests (tests/gpu/test_triton_harness.cpp):
# it normalizes by the mean of |x| instead of the root mean square, so its outputs are finite,
# plausible and wrong; the smoke stage must reject it. Everything else (the mapping, the ABI,
# the build) is right, so what fails is the arithmetic and nothing else.
# @tune NUM_WARPS: 4, 8
import triton
import triton.language as tl

NUM_WARPS = 4


@triton.jit
def wrong_rmsnorm(x_ptr, w_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    y_row = y_ptr + row * y_row_stride
    total = 0.0
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        total += tl.sum(tl.abs(tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0).to(tl.float32)))
    scale = 1.0 / (total / n_cols + eps)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (x * scale * w).to(y_ptr.dtype.element_ty), mask=mask)


AK_LAUNCH = {
    "inputs": {"x": "T", "weight": "T"},
    "outputs": {"y": "T"},
    "scalars": ["eps"],
    "require": ["x.stride[1] == 1", "y.stride[1] == 1", "weight.stride[0] == 1"],
    "launches": [{
        "kernel": wrong_rmsnorm,
        "grid": ("x.shape[0]",),
        "args": {"x_ptr": "x", "w_ptr": "weight", "y_ptr": "y", "n_cols": "x.shape[1]",
                 "x_row_stride": "x.stride[0]", "y_row_stride": "y.stride[0]", "eps": "eps"},
        "constexprs": {"BLOCK_N": 1024},
        "num_warps": NUM_WARPS,
        "num_stages": 1,
    }],
}
