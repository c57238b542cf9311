"""Liger-Kernel's Triton kernels (PyPI `liger-kernel`) for bench/compare.py, called through its
public functional API on compare.py's inputs, for the four operators it has:

    rmsnorm           liger_rms_norm(x, w, eps) (LLaMA casting)
    rotary_embedding  liger_rope(q, k, cos, sin): it rotates a query and a key tensor in one
                      kernel, so x's heads are split between the two (the same bytes moved)
    fused_mlp         LigerSwiGLUMLP's forward: cuBLAS gate and up projections, Liger's fused
                      silu(gate) * up, cuBLAS down projection
    cross_entropy     liger_cross_entropy(logits, targets, reduction="none") and its mean (it also
                      writes the logits' gradient in place, as Liger's forward always does)

The GPU machine has no internet: bench/gpu_triton.sh installs the wheel from .carry/wheels when it
was carried there (pip download liger-kernel --no-deps -d .carry/wheels); without it every Liger
cell is "absent" and the note says so.
"""

LIGER_OPS = ("rmsnorm", "rotary_embedding", "fused_mlp", "cross_entropy")


def liger_version():
    try:
        import liger_kernel  # noqa: F401
        from importlib.metadata import version
        return version("liger-kernel")
    except Exception:  # not installed, or a version whose import fails here
        return None


def liger_call(op, args):
    """(the Liger function computing `op`, its arguments made from compare.py's inputs), or None
    when Liger lacks the operator or is not installed."""
    if op not in LIGER_OPS or liger_version() is None:
        return None
    from liger_kernel.transformers import functional as lf

    if op == "rmsnorm":
        return (lambda x, w: lf.liger_rms_norm(x, w, 1e-6)), args
    if op == "rotary_embedding":
        x, cos, sin = args
        heads = x.shape[1] // 2
        return lf.liger_rope, (x[:, :heads].contiguous(), x[:, heads:].contiguous(), cos, sin)
    if op == "fused_mlp":
        return (lambda x, wg, wu, wd: lf.liger_swiglu(x @ wg.t(), x @ wu.t()) @ wd.t()), args

    def cross_entropy(logits, targets):
        loss = lf.liger_cross_entropy(logits, targets, reduction="none")
        return loss, loss.mean()
    return cross_entropy, args
