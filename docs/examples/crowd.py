"""A crowd: 400 humans in one Game, each walking, idling or striking, stepped together.

One compiled kernel steps every human's task stack and another samples, blends and builds
the bones of the whole crowd, so the crowd's bones come as batch arrays with the humans
last: ``g.ctx.bone_pos`` (3, 34, N) and ``g.ctx.bone_rot`` (4, 34, N), one human's
column at ``g.pose_row(name)``. ``scuffle bench`` times such a crowd (docs/performance.md;
a host with a big world calls ``gc.freeze()`` once it is loaded). Run: ``python docs/examples/crowd.py`` (no window).
"""
from __future__ import annotations

import numpy as np

from scuffle import Bone, Fight, Game, PlayerOptions, demo_set
from scuffle.game.fighters.moves import Move

SIDE = 20                                     # a 20 x 20 grid, 2 m apart
TASKS_PER_HUMAN = 12                          # the pool holds 360 tasks unless told (PlayerOptions)

with Game(PlayerOptions(pool_size=TASKS_PER_HUMAN * SIDE * SIDE)) as g:
    moves = demo_set()
    names = [f"h{i:03d}" for i in range(SIDE * SIDE)]
    for i, name in enumerate(names):
        g.add_human(name, moves, position=((i % SIDE) * 2.0, (i // SIDE) * 2.0, 0.0), heading=(i * 37) % 360)
    fight = Fight(g)                                          # the fight rules walk them
    for i, name in enumerate(names):
        inst = g.instance(name)
        if i % 3 == 0:                                        # walking north (the gait blend)
            fight.move(name, direction=(0.0, 1.0), pace="walk")
        elif i % 3 == 1:                                      # the idle
            g.change(name, g.player.loop(inst, Move.IDLE))
        else:                                                 # a jab, then the fight idle
            g.change(name, g.player.chain(inst, [Move.JAB, Move.FIGHT_IDLE]), fade=0.1)

    for _ in range(60):                                       # 2 s
        g.step()

    assert g.ctx.bone_pos is not None
    print(f"{len(g.humans())} humans, {g.update} updates; batch bone_pos {g.ctx.bone_pos.shape}")
    heads = g.ctx.bone_pos[2, Bone.HEAD, :]                   # every head's height, model space
    print(f"head heights {heads.min():.2f}-{heads.max():.2f} m")
    walked = [float(np.hypot(*(g.body(n).position[:2] - np.array([(i % SIDE) * 2.0, (i // SIDE) * 2.0]))))
              for i, n in enumerate(names)]
    print(f"walkers covered {min(walked[0::3]):.2f}-{max(walked[0::3]):.2f} m; "
          f"idlers {max(walked[1::3]):.2f} m")
    playing = {int(g.record(n).anim_id) for n in names}
    print("anim ids playing:", sorted(playing))
