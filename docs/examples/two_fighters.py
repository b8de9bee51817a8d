"""Two fighters driven from the host's code: every update the host reads both positions
and a few named bones, walks p1 up to p2 and strikes when in reach, and lets p2 grab.

Bones are rows 0-33 of ``Game.bones_world(name)`` (positions (34, 3) in metres, rotations
(34, 4) as x, y, z, w); ``scuffle.Bone`` names them (the spec's parent
table, "Bone transforms": 0 is motion, 1 the pelvis; the other names are ours, from the
table's shape). Run: ``python docs/examples/two_fighters.py`` (no window).
"""
from __future__ import annotations

import math

from scuffle import Bone, Fight, Game, demo_set
from scuffle.game.fighters.moves import Move

# The bones this host reads, by row of bones_world / bones_model.
WATCHED = {"head": Bone.HEAD, "right hand": Bone.R_HAND, "left foot": Bone.L_FOOT}
REACH = 1.0                       # metres between the two: close enough to strike

with Game() as g:
    moves = demo_set()
    g.add_human("p1", moves, position=(0.0, -2.5, 0.0), heading=0.0)      # facing +y
    g.add_human("p2", moves, position=(0.0, 2.5, 0.0), heading=180.0)     # facing -y
    fight = Fight(g)
    for name in ("p1", "p2"):
        g.change(name, g.player.loop(g.instance(name), Move.FIGHT_IDLE))

    highest_hand = 0.0
    for update in range(150):                      # 5 s
        p1, p2 = g.body("p1").position, g.body("p2").position
        gap = math.dist(p1[:2], p2[:2])
        walking = fight.combat("p1").move_speed > 0
        if gap > REACH and not walking and fight.free("p1"):
            fight.move("p1", direction=(p2[0] - p1[0], p2[1] - p1[1]), pace="walk")
        elif gap <= REACH and walking:
            fight.move("p1", speed=0.0)            # stop in reach
        elif gap <= REACH and fight.free("p1") and fight.strike("p1", Move.JAB):
            print(f"update {update}: p1 strikes at {gap:.2f} m")
        g.step()
        pos, _rot = g.bones_world("p1")            # read after the update
        highest_hand = max(highest_hand, float(pos[WATCHED["right hand"]][2]))
        if update % 50 == 49:
            where = ", ".join(f"{k} z={pos[b][2]:.2f}" for k, b in WATCHED.items())
            print(f"update {update}: p1 at ({p1[0]:.2f}, {p1[1]:.2f}), p2 at ({p2[0]:.2f}, {p2[1]:.2f}); "
                  f"p1's {where}")

    print(f"p1's right hand rose to {highest_hand:.2f} m")
    print(f"p2 took {fight.combat('p2').damage_taken:.0f} damage in {fight.combat('p2').hits} hits")
