# rotary_embedding, Triton, the LLaMA "rotate_half" form: for i < D/2 and position s,
#   y[i]       = x[i] * cos[s, i] - x[i + D/2] * sin[s, i]
#   y[i + D/2] = x[i + D/2] * cos[s, i] + x[i] * sin[s, i]
# Inputs x[B, H, S, D], cos[S, D/2], sin[S, D/2] (all of one dtype: fp16, bf16 or fp32); output
# y[B, H, S, D]; no scalars. Any B, H, S >= 1 and even D; inner strides 1, the others free.
#
# A program rotates BLOCK_S positions of one (batch, head), walking the half dim in BLOCK_HALF
# chunks (one chunk for D <= 2 * BLOCK_HALF); products in fp32, rounded once. The grid's first
# dimension runs over (batch, head) so that neighbouring programs share the same cos/sin rows
# (read from L2 after the first).
# Built twice: assuming 16-byte aligned pointers and D/2 and all strides multiples of 16 (vector
# loads), and without.
#
# Tuning parameters (module-level values below; the engine sets them):
#   BLOCK_S     positions per program
#   BLOCK_HALF  half-dim elements per chunk (a power of two)
#   NUM_WARPS   warps per program
#
# @tune BLOCK_S: 1, 2, 4, 8, 16, 32
# @tune BLOCK_HALF: 32, 64, 128
# @tune NUM_WARPS: 1, 2, 4, 8
# @require BLOCK_S * BLOCK_HALF / (32 * NUM_WARPS) >= 1 && BLOCK_S * BLOCK_HALF / (32 * NUM_WARPS) <= 32
# @require BLOCK_HALF <= D
import triton
import triton.language as tl

BLOCK_S = 8
BLOCK_HALF = 64
NUM_WARPS = 4


@triton.jit
def rotate_half(x_ptr, cos_ptr, sin_ptr, y_ptr, heads, seq_len, half,
                x_stride_b, x_stride_h, x_stride_s, y_stride_b, y_stride_h, y_stride_s, table_stride,
                BLOCK_S: tl.constexpr, BLOCK_HALF: tl.constexpr):
    batch_head = tl.program_id(0)
    batch = (batch_head // heads).to(tl.int64)
    head = (batch_head % heads).to(tl.int64)
    positions = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    x_rows = x_ptr + batch * x_stride_b + head * x_stride_h + positions[:, None].to(tl.int64) * x_stride_s
    y_rows = y_ptr + batch * y_stride_b + head * y_stride_h + positions[:, None].to(tl.int64) * y_stride_s
    table_rows = positions[:, None] * table_stride
    for start in range(0, half, BLOCK_HALF):
        cols = start + tl.arange(0, BLOCK_HALF)[None, :]
        mask = (positions[:, None] < seq_len) & (cols < half)
        first = tl.load(x_rows + cols, mask=mask, other=0.0).to(tl.float32)
        second = tl.load(x_rows + half + cols, mask=mask, other=0.0).to(tl.float32)
        c = tl.load(cos_ptr + table_rows + cols, mask=mask, other=0.0).to(tl.float32)
        s = tl.load(sin_ptr + table_rows + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_rows + cols, (first * c - second * s).to(y_ptr.dtype.element_ty), mask=mask)
        tl.store(y_rows + half + cols, (second * c + first * s).to(y_ptr.dtype.element_ty), mask=mask)


AK_LAUNCH = {
    "inputs": {"x": "T", "cos": "T", "sin": "T"},
    "outputs": {"y": "T"},
    "dims": {"B": "x.shape[0]", "H": "x.shape[1]", "S": "x.shape[2]", "D": "x.shape[3]"},
    "require": ["D % 2 == 0", "x.stride[3] == 1", "y.stride[3] == 1", "cos.stride[1] == 1", "sin.stride[1] == 1",
                "cos.stride[0] == sin.stride[0]", "cos.shape[0] >= S", "cos.shape[1] * 2 >= D"],
    "launches": [{
        "kernel": rotate_half,
        "grid": ("B * H", "cdiv(S, BLOCK_S)"),
        "args": {"x_ptr": "x", "cos_ptr": "cos", "sin_ptr": "sin", "y_ptr": "y", "heads": "H", "seq_len": "S",
                 "half": "D // 2", "x_stride_b": "x.stride[0]", "x_stride_h": "x.stride[1]",
                 "x_stride_s": "x.stride[2]", "y_stride_b": "y.stride[0]", "y_stride_h": "y.stride[1]",
                 "y_stride_s": "y.stride[2]", "table_stride": "cos.stride[0]"},
        "constexprs": {"BLOCK_S": BLOCK_S, "BLOCK_HALF": BLOCK_HALF},
        "num_warps": NUM_WARPS,
        "num_stages": 1,
        "aligned": ["x_ptr", "cos_ptr", "sin_ptr", "y_ptr", "half", "x_stride_b", "x_stride_h", "x_stride_s",
                    "y_stride_b", "y_stride_h", "y_stride_s", "table_stride"],
    }],
}
