"""The player: tasks and their handles, cursors, the clip look-up, the builders, the stack
rules, prepared commands and their buffer, orphan tasks, the batch driver and the Player over them;
warming the kernels ahead.

Holds: batch, cmdbuffer, construct, cursor, deferred, interfaces, lookup, orphans, player, prepared, recipe, stackrules, tasks, warmup.
May import: every floor below: scuffle.anim.base, scuffle.anim.maths, scuffle.anim.data, scuffle.anim.engine.
"""
