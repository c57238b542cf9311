"""The Ray side process of `autokernel optimize --ray`: the C++ loop (src/loop/ray_executor.cpp)
drives a Ray cluster through it, in JSON lines on stdin and stdout, because Ray's C++ API is
experimental.

On the cluster: one measuring actor per GPU (num_gpus=1, restarted when it dies), each running
the same judge as a local run (`autokernel worker --serve` on its node, which must have autokernel
at the same path), and compile tasks on CPUs (`autokernel worker --build`), whose modules come
back here and go out to the actor that measures them. Every decision stays with the C++ driver.
"""
