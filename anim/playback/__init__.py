"""The player: tasks and their handles, cursors, the clip look-up, the builders, the stack
rules, prepared commands, their buffer and their batches as columns, orphan tasks, the batch driver and the Player over them;
warming the kernels ahead.

Holds: batch, batched, cmdbuffer, construct, cursor, deferred, interfaces, lookup, orphans, player, prepared, recipe, stackrules, tasks, warmup.
May import: every floor below: scuffle.anim.base, scuffle.anim.maths, scuffle.anim.data, scuffle.anim.engine.
"""
