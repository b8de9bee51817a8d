"""The per-update rules of every fight on one world as one action: the quiet fights
found by a few array operations over all their fighters' rows, only the others run.

Each Fight's action (``Fight._update``) first frees the humans whose partner or holder
left, then handles its pending windows and ends, runs its controllers (its FighterAIs:
a decision every ``think_every`` updates) and counts its downed humans' time. A fight
whose update has nothing of that to do, its *quiet* update, only counts its AIs'
ticks. ``join`` puts a Fight into the group that is the last action of the context
when that is one, or replaces the last action when it is another fight's (a group of
the two, in their order), else appends the Fight's own action: the group stands where
the fights' actions stood, in the same order with the same neighbours.

With two fights or more, the group first reads every fighter's partner, holder, state
and generations as columns (one combat and one body table, every view current) and
picks the fights with something to do: a partner or holder gone, a human down, a
window or end pending, an AI about to decide, another controller than a seated
FighterAI, an AI's human not found, a new round due, separation on. Then it runs the
fights in order: a quiet one has its AIs' ticks counted, the others their whole update.
What one fight's rules write is its own fighters' rows and its own state, so a quiet
fight found before stays quiet; after a fight whose update may have run a host's code (a
listener, an event sink, a controller of its own, a subclass) or changed the world's
humans or names, the rest run whole. Otherwise (one fight, or the columns cannot stand
for the fights' own reads) each fight's own action runs, in order. Either way one that
raises is kept as the actions phase keeps it (``ctx.fail``) and the others run.
Original: none (ours: the rules of several fights on one world, as the bench's crowd
holds them).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from scuffle.components.bodies import NO_ATTACHMENT
from scuffle.game.fighters.fightdata import FightState
from scuffle.game.fighters.fightstates import FightGroup

__all__ = ["FightUpdates", "join"]

_DOWN = FightState.DOWN


class FightUpdates(FightGroup):
    """The per-update actions of the fights of one context, run as one (see the module
    docstring): a callable(ctx) in ``SimContext.actions``; ``fights`` in the order they
    joined. Holds no state of the game's: only the rows it found (``kept``: the world's
    key, its dict of humans, the number of fights, the tables, their blocks, the rows),
    kept while the world's humans and the tables' arrays are the same."""

    def __init__(self) -> None:
        super().__init__()
        self._down: tuple = (-1, np.zeros(0, np.int64))     # (len(texts), the codes of "down")
        self._live: tuple = (None, -1, np.zeros(0, np.int64))   # (parts, crowd version, entities sorted)

    def __call__(self, ctx: Any) -> None:
        """Run every fight's update of this update in order: a quiet one's AIs' ticks
        counted, the others' ``Fight._update`` (see the module docstring)."""
        fights = self.fights
        busy = key = None
        if len(fights) > 1:
            try:
                key = _key(fights[0])
                busy = self.busy()
            except Exception:                       # (each fight's own update meets it, in its turn)
                busy = None
        for k, f in enumerate(fights):
            if busy is not None and not busy[k] and _quiet(f, ctx):
                continue
            try:
                f._update(ctx)
            except Exception as exc:
                ctx.fail("actions", exc)
            if busy is not None and (_hosted(f) or not _same_world(f, key)):
                busy = None                         # a host's code may have run, or the humans changed: the rest whole

    @property
    def stateful_parts(self) -> list:
        """The fights, each saved in a snapshot as its own action would be
        (game.runtime.snapfile.stateful)."""
        return self.fights

    def rows(self) -> tuple | None:
        """(combat table, body table, the combat rows, the body rows, their generations as
        the views held them, each row's fight) of every fight's humans in order, or None
        when the columns cannot stand for the fights' own reads (a subclass's rules,
        fights on several worlds, two tables of a kind, a human twice). Found again only
        when the world's humans or names changed, or a table's arrays were replaced; then
        each fight's entries are read again only when its humans changed (``entries``)."""
        fights = self.fights
        game = fights[0]._lookup.__self__
        key = _world_key(game)
        kept = self.kept
        if kept is not None and kept[0] == key and kept[1] is game._entities and kept[2] == len(fights):
            ct, bt = kept[3]
            if kept[4][0] is ct.block and kept[4][1] is bt.block:
                return kept[5]
        if not all(_own(f, RULES) for f in fights):
            return None
        per_fight = self.entries(game)
        if per_fight is None:
            return None
        entries = [e for mine in per_fight for e in mine]
        if not entries:
            return None
        cts, bts, _, cr, br, _, cg, bg, _ = zip(*entries)
        ct, bt = cts[0], bts[0]
        if not all(t is ct for t in cts) or not all(t is bt for t in bts):
            return None
        seg = [k for k, mine in enumerate(per_fight) for _ in mine]
        if len(set(cr)) != len(cr) or len(set(br)) != len(br):
            return None
        got = (ct, bt, np.array(cr, np.intp), np.array(br, np.intp), np.array(cg, ct.gen.dtype).tobytes(),
               np.array(bg, bt.gen.dtype).tobytes(), np.array(seg, np.intp))
        self.kept = (key, game._entities, len(fights), (ct, bt), (ct.block, bt.block), got)
        return got

    def busy(self) -> list | None:
        """Per fight, whether its humans' rows give it something to do this update (a
        partner or holder gone, a human down), read as columns; None when the columns
        cannot stand for the fights' own reads, or a view is stale (each fight's own
        read then raises, in its turn)."""
        got = self.rows()
        if got is None:
            return None
        ct, bt, cr, br, cg, bg, seg = got
        if ct.gen[cr].tobytes() != cg or bt.gen[br].tobytes() != bg:
            self.kept, self.per = None, {}          # (a view moved or let go: every fight's read again next time)
            return None
        live = self._live_ids()
        partner = ct.partner[cr]
        holder = bt.attachment[br]
        texts = ct.texts
        if self._down[0] != len(texts):             # (append-only: a code never changes its meaning)
            self._down = (len(texts), np.array([i for i, t in enumerate(texts) if t == _DOWN], np.int64))
        down = self._down[1]
        state = ct.state[cr]
        noisy = state == down[0] if len(down) == 1 else np.isin(state, down)
        paired = np.flatnonzero(partner >= 0)             # (most fighters have no partner: those alone looked up)
        if len(paired):
            noisy[paired[~_among(partner[paired], live)]] = True
        held = np.flatnonzero(holder != NO_ATTACHMENT)
        if len(held):
            h = holder[held]
            noisy[held[(h < 0) | ~_among(h, live)]] = True
        if not noisy.any():
            return [False] * len(self.fights)
        return np.bincount(seg[noisy], minlength=len(self.fights)).astype(bool).tolist()

    def _live_ids(self) -> np.ndarray:
        """The entities of the world's humans (the look-ups' ``_alive``), sorted: the
        crowd's own array of them (its dict holds no other entity, so as many are the
        same), kept while the crowd's change count and its dict are the same."""
        game = self.fights[0]._lookup.__self__
        crowd = game.ctx.crowd
        parts, version = game._entities, crowd.version
        kept = self._live
        if kept[0] is not parts or kept[1] != version:
            ids = crowd.entity_ids
            if len(ids) != len(parts):              # (humans esper deletes at its next process: gone from the dict)
                ids = np.array(sorted(parts), np.int64)
            kept = self._live = (parts, version, ids)
        return kept[2]


def _world_key(game: Any) -> tuple:
    """The world's humans and names as the fights' look-ups read them: the crowd's and the
    names' change counts, its dict of humans, its readings whole."""
    crowd = game.ctx.crowd
    return (crowd.version, game.names.version, id(game._entities), crowd.rebuilds)


def _key(f: Any) -> tuple:
    """``_world_key`` of fight ``f``'s world, esper's changes seen first (``Game._see``, as
    each fight's ``_parts`` does)."""
    game = f._lookup.__self__
    game._see()
    return _world_key(game)


def _same_world(f: Any, key: Any) -> bool:
    """Whether the world's key (``_key``) is still ``key``; False when it cannot be read."""
    try:
        return _key(f) == key
    except Exception:
        return False


def _among(ents: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Whether each of ``ents`` is one of the sorted ``live``."""
    if not len(live):
        return np.zeros(len(ents), np.bool_)
    at = np.minimum(np.searchsorted(live, ents), len(live) - 1)
    return live[at] == ents


def _quiet(f: Any, ctx: Any) -> bool:
    """Whether fight ``f``'s update has nothing to do this update but count its AIs'
    ticks (its rows found quiet already: ``FightUpdates.busy``), and if so count them, as
    each AI's ``decide`` does between decisions. Original: none (ours)."""
    if f.pending or f.separate or (f.rounds and f.ko_at is not None and ctx.update - f.ko_at >= f.round_pause) \
            or "_update" in f.__dict__:             # (an action of the fight's own: it runs)
        return False
    seated = f._seated
    if f.controllers != seated or f.game.fight is not f:
        return False
    game = f._lookup.__self__
    names, humans = game.names, game._entities
    counted: list = []
    for ctl in seated:
        if not _own(ctl, TICKS) or "decide" in ctl.__dict__:
            return False                            # a controller of the host's: its own code each update
        tick = ctl.between_decisions(names, humans)
        if tick is None:
            return False                            # a decision, or decide's own error
        if not tick:
            continue                                # (disabled: nothing counted)
        t, r = ctl.state_table, ctl.state_row
        if any(c[1] == r and c[0] is t for c in counted):
            return False                            # (an AI seated twice counts twice)
        counted.append((t, r, tick))
    for t, r, tick in counted:
        t.m_tick[r] = tick
    return True


def _hosted(f: Any) -> bool:
    """Whether fight ``f``'s update may have run a host's code: a listener of its events,
    an event sink, a controller other than a FighterAI, a subclass's rules."""
    if f.listeners or f.event_sink is not None or not _own(f, RULES):
        return True
    return not all(_own(ctl, TICKS) for ctl in f._seated)


# The marks the rules this module stands for set on their own classes (not inherited: a
# subclass may do more): Fight's per-update action (game.fighters.combat) and FighterAI's
# ticks between decisions (game.fighters.ai), read here without importing either (both
# import this module's).
RULES, TICKS = "quiet_rules", "quiet_ticks"


def _own(obj: Any, mark: str) -> bool:
    """Whether ``obj``'s class itself (not a base) carries ``mark``."""
    return obj.__class__.__dict__.get(mark, False)


def join(ctx: Any, fight: Any) -> None:
    """Put ``fight``'s per-update action into ``ctx.actions``: into the group that is the
    list's last entry; with another fight's own action last, a group of the two in its
    place; else its own action appended."""
    acts = ctx.actions
    last = acts[-1] if acts else None
    if _own(fight, RULES):
        if last.__class__ is FightUpdates:
            last.fights.append(fight)
            return
        other = getattr(last, "__self__", None)
        if other is not None and other is not fight and _own(other, RULES) \
                and getattr(last, "__func__", None) is type(other)._update:
            group = FightUpdates()
            group.fights += [other, fight]
            acts[-1] = group
            return
    acts.append(fight._update)
