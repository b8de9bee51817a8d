"""The tables and the kernels: the structure-of-arrays state and its registries, snapshots,
checks and digests; the clip bank and sampler; the compiled step, pose, flush and root
motion as jobs; the sample plan, threads, the compile cache and the cold start (the
kernels run as Python while they compile).

Holds: cacheindex, callbacks, cmdkernel, coldstart, crowd, digest, interpret, jitcache, jitpipe, jobs, kernel_types, kernels, kernels_fetch, kernels_flush, kernels_maths, kernels_motion, kernels_pose, kernels_rows, kernels_step, kernels_write, numbastart, plaindata, plan, rules, sampler, snapcheck, snapkernel, snapshot, stack, store, trusted, writefirst.
May import: scuffle.anim.base, scuffle.anim.maths, scuffle.anim.data, numpy, numba.
"""
