# cross_entropy, Triton: loss[r] = logsumexp(logits[r, :]) - logits[r, targets[r]]; mean_loss[0]
# = mean_r loss[r].
# Inputs logits[M, V] (fp16, bf16 or fp32), targets[M] (i64); outputs loss[M] (fp32), mean_loss[1]
# (fp32); no scalars. Any M, V >= 1; the inner stride of logits is 1, other strides free. A
# target outside [0, V) reads no memory (it counts as a logit of 0).
#
# Two launches on the stream:
#   losses  one program per row reads the row once, in BLOCK_V-wide chunks: each chunk's max
#           updates the running max, and the running sum of exponentials is rescaled to it (exp2
#           of pre-scaled values, fp32), so one exponential per logit.
#   mean    one program sums the M losses in a fixed order (no atomics: repeated runs are
#           bitwise equal) and divides by M.
# The losses launch is built twice: assuming 16-byte aligned logits and V and its row stride
# multiples of 16 (vector loads), and without.
#
# Tuning parameters (module-level values below; the engine sets them):
#   BLOCK_V     logits per chunk (a power of two)
#   NUM_WARPS   warps per row program
#   NUM_STAGES  chunks in flight (above 1, Triton pipelines the loop's loads through shared memory)
#
# @tune BLOCK_V: 1024, 2048, 4096, 8192, 16384
# @tune NUM_WARPS: 4, 8, 16, 32
# @tune NUM_STAGES: 1, 2, 3
# @require BLOCK_V / (32 * NUM_WARPS) >= 4 && BLOCK_V / (32 * NUM_WARPS) <= 64
import triton
import triton.language as tl

BLOCK_V = 4096
NUM_WARPS = 8
NUM_STAGES = 1

LOG2E = tl.constexpr(1.4426950408889634)
LN2 = tl.constexpr(0.6931471805599453)
MEAN_BLOCK = 1024


@triton.jit
def row_losses(logits_ptr, targets_ptr, loss_ptr, n_classes, logits_row_stride, targets_stride, loss_stride,
               BLOCK_V: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    logits_row = logits_ptr + row * logits_row_stride
    # In log2 units: the running max m2 of x * log2(e) and the sum of 2^(x * log2(e) - m2). Every
    # chunk holds at least one logit, so its max is finite and the rescale never sees -inf - -inf.
    running_max = -float("inf")
    total = 0.0
    for start in range(0, n_classes, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_row + cols, mask=cols < n_classes, other=-float("inf")).to(tl.float32) * LOG2E
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        total = total * tl.exp2(running_max - new_max) + tl.sum(tl.exp2(x - new_max), axis=0)
        running_max = new_max
    target = tl.load(targets_ptr + row * targets_stride)
    valid = (target >= 0) & (target < n_classes)
    target_logit = tl.load(logits_row + target, mask=valid, other=0.0).to(tl.float32)
    log_sum_exp = (running_max + tl.log2(total)) * LN2
    tl.store(loss_ptr + row * loss_stride, log_sum_exp - target_logit)


@triton.jit
def mean_of(loss_ptr, mean_ptr, n_rows, loss_stride, BLOCK: tl.constexpr):
    partial = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_rows, BLOCK):
        rows = start + tl.arange(0, BLOCK)
        partial += tl.load(loss_ptr + rows.to(tl.int64) * loss_stride, mask=rows < n_rows, other=0.0)
    tl.store(mean_ptr, tl.sum(partial, axis=0) / n_rows)


AK_LAUNCH = {
    "inputs": {"logits": "T", "targets": "i64"},
    "outputs": {"loss": "fp32", "mean_loss": "fp32"},
    "dims": {"M": "logits.shape[0]", "V": "logits.shape[1]"},
    "require": ["logits.stride[1] == 1", "targets.shape[0] == M", "loss.shape[0] == M"],
    "launches": [
        {
            "kernel": row_losses,
            "grid": ("M",),
            "args": {"logits_ptr": "logits", "targets_ptr": "targets", "loss_ptr": "loss", "n_classes": "V",
                     "logits_row_stride": "logits.stride[0]", "targets_stride": "targets.stride[0]",
                     "loss_stride": "loss.stride[0]"},
            "constexprs": {"BLOCK_V": BLOCK_V},
            "num_warps": NUM_WARPS,
            "num_stages": NUM_STAGES,
            "aligned": ["logits_ptr", "n_classes", "logits_row_stride"],
        },
        {
            "kernel": mean_of,
            "grid": (1,),
            "args": {"loss_ptr": "loss", "mean_ptr": "mean_loss", "n_rows": "M", "loss_stride": "loss.stride[0]"},
            "constexprs": {"BLOCK": MEAN_BLOCK},
            "num_warps": 4,
            "num_stages": 1,
        },
    ],
}
