"""The number model: the PS2 FPU's float32 time, transcendental functions from + - * / and
sqrt (the same bits on every CPU), quaternions, the skeleton and poses as
structure-of-arrays with their blends.

Holds: detmath, f32, pose, quat, skeleton.
May import: scuffle.anim.base, numpy.
"""
