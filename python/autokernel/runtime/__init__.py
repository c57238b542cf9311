"""What runs inside a user's model: the nine operators as torch.library custom ops over compiled
kernel modules (the C ABI), the matching that finds them in a traced forward pass, and apply().

Self-contained (relative imports, torch and the standard library only), so that `autokernel
export` copies this directory into a package of its own. The custom ops' namespace is the name
of the top-level package holding this one: `autokernel::rmsnorm` here, `<package>::rmsnorm` in an
export, so that the bridge and any number of exports load side by side.
"""
NAMESPACE = __name__.split(".")[0]
