"""A problem as the engine writes it, "4x32x4096x128:causal=1,kv_heads=8": its dimensions before the
colon, its integer params after it. One reading for the bench scripts (compare.py, compare_ours.py,
matmul_shapes.py, ncu_driver.py)."""


def shape_dims(shape):
    """The dimensions, [4, 32, 4096, 128]."""
    return [int(v) for v in shape.partition(":")[0].split("x")]


def shape_params(shape):
    """The params, {"causal": 1, "kv_heads": 8}."""
    tail = shape.partition(":")[2]
    return {name: int(value) for name, value in (item.split("=", 1) for item in tail.split(",") if item)}


def is_causal(shape):
    """Attention's causal flag (default 1, as the engine's)."""
    return shape_params(shape).get("causal", 1) != 0
