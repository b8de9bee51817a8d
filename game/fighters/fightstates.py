"""The state functions of every fight on one world as one: the intents of all their
fighters turned into state velocities by a few array operations over their rows.

Each Fight's state function (``Locomotion._state_velocities``: 0x0023fea8's state
update, "Root motion" L376) reads and writes only its own humans' rows (the combat row's
speed, direction and impulse, the body row's state velocity, the held flags), so the
fights' functions run one after the other give what one pass over all their humans
gives, provided nothing runs between them. ``join`` therefore puts a Fight into the
group that is the last state function of the context (else a new group, appended): the
group stands where the fights' functions stood, in the same order with the same
neighbours. With two fights or more, each on the mask rule (``LocomotionStop.MASK``),
every human's rows in one table of each kind, none twice, no stale view and every
velocity within bounds, the pass is numpy's over their rows (the same float64
operations as the per-human code: products, sums, the hypot's sqrt of x*x + y*y, the
decay); otherwise each fight's own function runs, in order, one that raises kept as
the state update keeps it (``ctx.fail``), as before. Original: 0x0023fea8, 0x00241a88.
"""
from __future__ import annotations

from operator import itemgetter
from typing import Any

import numpy as np

from scuffle.anim.base.limits import MAX_COORD
from scuffle.anim.engine.writefirst import write_first
from scuffle.anim.playback.tasks import LOCOMOTION_STILL
from scuffle.components import Body, Combat, HumanRecord
from scuffle.game.fighters.fightdata import IMPULSE_DECAY, LocomotionStop

__all__ = ["FightGroup", "FightStates", "join"]

_STILL = int(LOCOMOTION_STILL)
_MASK = LocomotionStop.MASK
_count = np.count_nonzero
_PUSH = 0.05                 # a throw's push below this (its length) is over (Locomotion._state_velocities)


class FightGroup:
    """What the groups of a world's fights share (``FightStates`` here, FightUpdates in
    game.fighters.fightupdates): ``fights`` in the order they joined, and the rows found
    (``kept``, each group's own). Holds no state: only what it read of the fights."""

    def __init__(self) -> None:
        self.fights: list = []
        self.kept: tuple | None = None
        # fight -> (its parts, its humans' tables, rows and generations: ``_entry``): kept
        # while its ``_parts`` gives the same tuple (a join or a leave elsewhere reads no
        # other fight's) and the crowd was not read again whole (``per_of``: Crowd.rebuilds;
        # a restore that moved a view, a change behind the Game's back)
        self.per: dict = {}
        self.per_of = -1

    def entries(self, game: Any) -> list | None:
        """Each fight's humans' entries (``_entry``: tables, rows, generations), a tuple a
        fight in order, read again only for a fight whose ``_parts`` is another tuple (see
        ``per``); None when a fight is on another world."""
        crowd = game.ctx.crowd
        if self.per_of != crowd.rebuilds:
            self.per, self.per_of = {}, crowd.rebuilds
        per, fresh, out = self.per, {}, []
        for f in self.fights:
            if f._lookup.__self__ is not game:
                return None
            parts = f._parts()
            mine = per.get(f)
            if mine is None or mine[0] is not parts:
                mine = (parts, tuple(_entry(m) for _, m in parts))
            fresh[f] = mine
            out.append(mine[1])
        self.per = fresh
        return out


class FightStates(FightGroup):
    """The state functions of the fights of one context, run as one (see the module
    docstring): a callable(ctx) in ``SimContext.state_functions``; ``fights`` in the
    order they joined. Holds no state: only the rows it found (``kept``: the fights'
    parts, the three tables and their blocks, the rows and generations), kept while the
    fights' humans and the tables' arrays are the same."""

    def __call__(self, ctx: Any) -> None:
        fights = self.fights
        if len(fights) > 1 and self.one_pass():
            return
        for f in fights:
            try:                                 # one that raises: kept, the others run (systems/motion.py)
                f._state_velocities(ctx)
            except Exception as exc:
                ctx.fail("state", exc)

    def rows(self) -> tuple | None:
        """(combat table, body table, human table, the combat rows, the body rows, the
        human rows, their generations as the rows held them) of every fight's humans in
        order, or None when the pass cannot stand for the fights' own functions (another
        rule, the functions replaced, fights on several worlds, two tables of a kind, a
        human twice). Found again only when the world's humans or names changed (the
        key each fight's ``_parts`` keeps) or a table's arrays were replaced (its block is
        another); then each fight's rows are read from its views again only when its
        ``_parts`` is another tuple (its humans changed), the crowd was read whole since
        (``Crowd.rebuilds``: a view may hold another row) or the last pass found a stale
        view (``one_pass``), so that a join or a leave reads no other pair's views."""
        fights = self.fights
        for f in fights:
            if f.locomotion_stop != _MASK or not getattr(type(f)._state_velocities, "one_pass", False):
                return None
        game = fights[0]._lookup.__self__
        game._see()
        key = (game.ctx.crowd.version, game.names.version)
        kept = self.kept
        if kept is not None and kept[0] == key and kept[1] is game._entities and kept[2] == len(fights):
            ct, bt, ht = kept[3]
            blocks = kept[4]
            if blocks[0] is ct.block and blocks[1] is bt.block and blocks[2] is ht.block:
                return kept[5]
        per_fight = self.entries(game)
        if per_fight is None:
            return None
        entries = [e for mine in per_fight for e in mine]
        if len(entries) < 2:
            return None
        ct, bt, ht = entries[0][:3]
        if not all(e[0] is ct and e[1] is bt and e[2] is ht for e in entries):
            return None
        _, _, _, cr, br, hr, cg, bg, hg = zip(*entries)
        if len(set(cr)) != len(cr) or len(set(br)) != len(br) or len(set(hr)) != len(hr):
            return None
        # the generations as bytes (a human table's are a list: read through one itemgetter)
        got = (ct, bt, ht, np.array(cr, np.intp), np.array(br, np.intp), np.array(hr, np.intp),
               np.array(cg, ct.gen.dtype).tobytes(), np.array(bg, bt.gen.dtype).tobytes(), (itemgetter(*hr), tuple(hg)))
        self.kept = (key, game._entities, len(fights), (ct, bt, ht), (ct.block, bt.block, ht.block), got)
        return got

    def one_pass(self) -> bool:
        """Every fight's state function as one pass over its humans' rows (see the module
        docstring); False, with nothing written, when it cannot stand for them."""
        got = self.rows()
        if got is None:
            return False
        ct, bt, ht, cr, br, hr, cg, bg, hg = got
        if ct.gen[cr].tobytes() != cg or bt.gen[br].tobytes() != bg or hg[0](ht.gen) != hg[1]:
            self.per = {}                        # (a view moved or let go: read every fight's again next time)
            return False                         # a stale view: each function's own error
        speed = ct.move_speed[cr]
        moving = speed > 0.0
        if _count(moving):
            c = ht.commands                      # a held flag read: its human's waiting commands first
            if c is not None and c.n and any(r in c.due for r in hr[moving].tolist()):
                write_first(ht)
            goes = moving & ((ht.flags[hr] & _STILL) == 0)
            vel = np.where(goes[:, None], ct.move_dir[cr] * speed[:, None], 0.0)
        else:
            vel = np.zeros((len(cr), 3))
        imp = ct.impulse[cr]
        ix, iy = imp[:, 0], imp[:, 1]
        push = np.sqrt(ix * ix + iy * iy) > _PUSH            # detmath.hypot_s's sqrt, in its range
        if _count(push):
            vel[push] += imp[push]                           # 0.0 + the push, or the intent's + the push
        if _count(np.abs(vel) <= MAX_COORD) != vel.size:
            return False                                     # the setter's error, in its human's turn
        imp[push] *= IMPULSE_DECAY
        imp[~push] = 0.0
        ct.impulse[cr] = imp
        bt.state_velocity[br] = vel
        return True


def _entry(mine: dict) -> tuple:
    """A human's (combat, body, human table, its three rows, their generations) as its
    views hold them (``mine``: its components)."""
    c, b, rec = mine[Combat], mine[Body], mine[HumanRecord]
    return (c._table, b._table, rec.table, c._row, b._row, rec.row, c._gen, b._gen, rec.gen)


def join(ctx: Any, fight: Any) -> FightStates:
    """Put ``fight``'s state function into ``ctx.state_functions``: into the group that is
    the list's last entry, else a new group appended. Returns the group."""
    sf = ctx.state_functions
    group = sf[-1] if sf and sf[-1].__class__ is FightStates else None
    if group is None:
        group = FightStates()
        sf.append(group)
    group.fights.append(fight)
    return group
