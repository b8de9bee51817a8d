"""Save, restore and checksum a whole Game: rollback-exact snapshots.

``Game.snapshot()`` returns a ``Snapshot``: everything the next updates read. That is
the engine's tables and Python values (anim.engine.snapshot), the bodies' table, each human's
components (combat state, pose row, range records, fired events), the update counter,
the last update's poses and bones, the esper entity counter and names, the fight rules'
state (``Fight.save_state``: combat states, health, rounds, the log's counts, pending
hits and windows, its controllers' random generators) and that of every action or state
function that has ``save_state`` / ``load_state`` (the scenario's script, a bench
crowd). Callbacks are data (anim.engine.callbacks), so no code is saved.

``Game.restore(snapshot)`` writes it all back; stepping on gives the same trace bytes as
never having left. A snapshot is independent of later steps: it restores any number of
times, into the Game that took it only. ``snapshot.to_bytes()`` / ``Snapshot.from_bytes(b)``
(``Snapshot.read(path)``) give the file form, data only (game.runtime.snapfile;
docs/formats.md, "Snapshot"): it restores into any Game with the same configuration digest,
after every row and value is checked; anything that does not fit is refused with one line
(SnapshotError) before anything changes. ``Game.checksum()`` (``Snapshot.checksum()``) is
a digest of the whole state, for a rollback sync test or for peers that compare states.

What a restore refuses (SnapshotError, nothing changed): a snapshot of another Game or
engine, one whose humans are not all still in the world under the same entity (a human
removed after the snapshot cannot come back, nor one removed and added again under its name;
one added after it is removed), one taken
with the fight rules attached on a Game without them, or the reverse.

Not saved (by design): the world's configuration, which a step never changes (the anim
sets registered, the handlers, the options, the systems: the file carries its digest).
Handles (tasks, cursors) made after the snapshot belong to the abandoned future: drop
them after a restore.
"""
from __future__ import annotations

import dataclasses
import enum
import hashlib
import io
import itertools
import pickle
import random
import struct
import weakref
from collections import Counter, deque
from typing import Any

import esper
import numpy as np

from scuffle.anim.engine import plaindata
from scuffle.anim.engine import snapshot as S
from scuffle.anim.engine.store import TableArena
from scuffle.anim.playback.cursor import Cursor, FiredEvent
from scuffle.components import Animator, Body, Combat
from scuffle.game.runtime import snapfile as F

__all__ = ["Snapshot", "SnapshotError", "SNAPSHOT_VERSION", "take", "restore", "checksum", "parts", "sync_test",
           "SyncError", "SyncReport", "SavedRandom"]

# The byte form's format (game.runtime.snapfile: docs/formats.md, "Snapshot"); a file of
# another format is refused (SnapshotError).
SNAPSHOT_VERSION = F.FORMAT


class SnapshotError(ValueError):
    """A snapshot that cannot be restored here, or bytes that are not a snapshot (one line,
    naming the section and field or the byte offset); nothing was changed."""


@dataclasses.dataclass(slots=True)
class _State:
    """The saved values (see the module docstring); plain data and handles."""

    engine: str
    updates_run: int
    update: int
    names: dict[str, int]
    entity_next: int
    engine_state: Any
    ctx: dict[str, Any]
    bodies: tuple
    combats: tuple
    fight: Any
    extras: list
    fight_log: Any = None          # the fight rules' log (Fight.save_log): restored, not in the checksum
    # the fight rules' AI rows (Fight.ai_rows: a TableState, a view of the arena's copy when
    # the tables were saved through it); None: no such table (a file's state, the reference
    # engine's, no fight rules), the AIs' states then in ``fight``
    ais: Any = None
    # the humans' join numbers and their set's lineage (Game.names: a human that left and
    # joined again under its name is another); None: a file's (its humans are this Game's)
    joins: Any = None
    lineage: int = -1


class Snapshot:
    """A whole Game at the end of an update (``Game.snapshot()``).

    ``update`` is the number of updates run when it was taken (``Game.update``); ``humans``
    the names saved. A snapshot taken of a Game restores into that Game only.
    ``to_bytes()`` gives its file form (data only: game.runtime.snapfile),
    ``Snapshot.from_bytes(b)`` reads one back (framed and checked: magic, format, sizes,
    CRC-32), restorable into any Game set up the same way (the same configuration digest,
    humans and anim sets), where every row and value is checked first. ``checksum()`` is
    a digest of the state, the same for a snapshot and its bytes read back.
    """

    __slots__ = ("_state", "_parsed", "_game", "update", "humans", "engine")

    def __init__(self, state: _State | None, parsed: Any = None, game: Any = None):
        self._state, self._parsed = state, parsed
        self._game = weakref.ref(game) if game is not None else None
        if state is not None:
            self.update, self.humans, self.engine = state.updates_run, tuple(state.names), state.engine
        else:
            m = parsed.meta
            self.update, self.humans, self.engine = m["updates_run"], tuple(m["names"]), m["engine"]

    def __repr__(self) -> str:
        return f"Snapshot(update={self.update}, humans={list(self.humans)}, engine={self.engine!r})"

    @property
    def nbytes(self) -> int:
        """The bytes of the arrays the snapshot holds (its tables' blocks: most of its
        memory; the tables' bytes when read from a file)."""
        if self._state is None:
            return sum(len(t[2]) for t in self._parsed.tables.values())
        total = 0
        st = self._state
        parts_ = [st.bodies[0], st.combats[0]]
        es = st.engine_state
        if isinstance(es, S.EngineState):
            parts_ += [*es.tables.values(), es.humans]
            total += es.player[0][0].nbytes
        for ts in parts_:
            total += ts.block.nbytes
        return total

    # ---------------------------------------------------------------- digest
    def checksum(self) -> str:
        """A sha256 (hex) of the state (game.runtime.snapfile.checksum): equal states give
        equal digests on any machine, and a snapshot's bytes read back give its own."""
        if self._state is None:
            try:
                return F.checksum_parsed(self._parsed)
            except (KeyError, TypeError, IndexError, ValueError, plaindata.PlainDataError):
                raise SnapshotError("Snapshot.checksum: the file's values are not a snapshot's (restore it for the "
                                    "field at fault)") from None
        game = self._game() if self._game is not None else None
        if game is None or game.closed:
            raise SnapshotError("Snapshot.checksum: the Game it was taken of is closed; take the checksum while "
                                "it is open, or of the bytes read back")
        return _digest(game, self._state)

    # ---------------------------------------------------------------- bytes
    def to_bytes(self) -> bytes:
        """The file form (game.runtime.snapfile; docs/formats.md, "Snapshot"): a header
        (magic ``SCUFSNAP``, format, scuffle's version, the Game's configuration digest,
        sizes, the payload's CRC-32), a directory and typed sections: each table's block
        with its declared columns, and the plain values. The last update's outputs are not
        in it. Rejected (SnapshotError): a Game closed since, the reference engine's state,
        a callback given as code (give it as data: anim.engine.callbacks.Callback), a human removed
        since the last update whose tasks wait for the flush."""
        if self._parsed is not None:
            raise SnapshotError("Snapshot.to_bytes: a snapshot read from bytes: keep those bytes")
        game = self._game() if self._game is not None else None
        if game is None or game.closed:
            raise SnapshotError("Snapshot.to_bytes: the Game it was taken of is gone (closed): write the byte "
                                "form while the Game is open")
        try:
            return F.encode(game, self._state)
        except (S.NoPlainForm, plaindata.PlainDataError) as e:
            raise SnapshotError(f"Snapshot.to_bytes: {e}") from None

    @classmethod
    def from_bytes(cls, data: bytes) -> "Snapshot":
        """A snapshot from ``to_bytes``'s form, framed and checked (magic, format, sizes,
        CRC-32, each section's plain data). Rejected (SnapshotError, one line naming the
        field or byte offset): not bytes, more than snapfile.MAX_BYTES, anything that does
        not frame. Its rows and values are checked against a Game when it is restored."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise SnapshotError(f"Snapshot.from_bytes: expected bytes, got {type(data).__name__}")
        if len(data) > F.MAX_BYTES:
            raise SnapshotError(f"snapshot: {len(data)} bytes, more than the {F.MAX_BYTES}-byte budget")
        try:
            parsed = F.parse(bytes(data))
        except F._Refused as e:
            raise SnapshotError(f"snapshot: {e}") from None
        return cls(None, parsed)

    @classmethod
    def read(cls, path: str) -> "Snapshot":
        """``from_bytes`` of the file at ``path``: a regular file of at most
        snapfile.MAX_BYTES, never read past its size (a FIFO or a device is refused without
        a read). Rejected: SnapshotError naming the file (one that cannot be read, too)."""
        try:
            data = F.read_file(path)
        except F._Refused as e:
            raise SnapshotError(f"snapshot: {e}") from None
        return cls.from_bytes(data)

    def _resolved(self, game) -> _State:
        """The state: this Game's own snapshot as taken, or a file's checked against the
        Game and rebuilt in it (snapfile.to_state). Rejected (SnapshotError): a snapshot
        of another Game; a file that does not fit this one."""
        if self._state is not None:
            if self._game is None or self._game() is not game:
                raise SnapshotError("Game.restore: this snapshot was taken of another Game; a Snapshot restores "
                                    "into its own Game (give another Game its bytes: to_bytes / from_bytes)")
            return self._state
        try:
            return F.to_state(game, self._parsed, _State)
        except F._Refused as e:
            raise SnapshotError(f"snapshot: {e}") from None


# ---------------------------------------------------------------- take and restore
def _entity_next(world: str) -> int:
    """The id esper's world ``world`` gives its next entity, without giving it: esper 3
    keeps the current world's counter, an itertools.count, as a module global, and the
    others' in its context map (saved back there when the world is switched away from).
    The id is taken from the counter, which is replaced by a new one from that id (a
    count has no cheaper read than its repr)."""
    if esper.current_world == world:
        n = next(esper._entity_count)
        esper._entity_count = itertools.count(n)
    else:
        saved = esper._context_map[world]
        n = next(saved[0])
        esper._context_map[world] = (itertools.count(n), *saved[1:])
    return n


def _entity_next_back(world: str, n: int) -> None:
    """Make ``n`` the id esper's world ``world`` gives its next entity (see _entity_next):
    a new counter from ``n``, cheaper than reading the old one's."""
    if esper.current_world == world:
        esper._entity_count = itertools.count(n)
    else:
        esper._context_map[world] = (itertools.count(n), *esper._context_map[world][1:])


def _instances(game) -> list:
    return [game.component(e, Animator).instance for _, e in game.humans()]


def _loose(game) -> list:
    """The humans the compiled engine has no row for yet (added, never stepped)."""
    seated = game.player.batch._instances
    if len(seated) - seated.count(None) == len(game.names):
        return []
    batch = game.player.batch
    return [i for i in _instances(game) if i.engine is not batch]


class _Plan:
    """What a Game's snapshots are made with, kept on the Game and made again when what
    it comes from changes: the arena of its seven tables (anim.engine.store.TableArena:
    the engine's five, the bodies', the combat states'), and the stateful actions
    (snapfile.stateful) of the action and state function lists as they were (``lists``).
    The reference engine's Game has no arena (its state is its objects)."""

    __slots__ = ("arena", "lists", "stateful", "names", "ais", "game_ref", "owners", "calls", "forms")

    def __init__(self, game) -> None:
        # (Game.names' version, a copy of it): the copy every snapshot of that version
        # holds (a snapshot's values are never written to)
        self.names: tuple = (-1, None, (), {})
        self.game_ref = weakref.ref(game)       # every snapshot's reference to its Game
        st, ctx = getattr(game.player, "stores", None), game.ctx
        # the fight rules' AI rows (Fight.ai_rows), the arena's eighth table when there are some
        self.ais = getattr(game.fight, "ai_rows", None) if st is not None else None
        tables = (st.cursors, st.fades, st.gaits, st.tasks, st.humans, ctx.bodies, ctx.combats) if st is not None \
            else ()
        if self.ais is not None:
            tables += (self.ais,)
        self.arena = None if st is None else TableArena(tables)
        self.lists: tuple = ()
        self.stateful: list = []
        # the checksum's parts kept between calls (snapfile.checksum_game's ``kept``)
        self.owners: Any = None
        self.calls: Any = None
        self.forms: dict = {}


def _plan(game) -> _Plan:
    plan = game.__dict__.get("_snapshot_plan")
    if plan is None or (plan.ais is not None and plan.ais is not getattr(game.fight, "ai_rows", None)) or \
            (plan.ais is None and plan.arena is not None and getattr(game.fight, "ai_rows", None) is not None):
        plan = game._snapshot_plan = _Plan(game)        # (fight rules attached or replaced since)
    return plan


def _stateful(game, plan: _Plan) -> list:
    """snapfile.stateful(game), computed again only when the lists it reads changed."""
    ctx = game.ctx
    lists = (game.fight, *ctx.state_functions, None, *ctx.actions)
    if lists != plan.lists:
        plan.stateful = F.stateful(game)
        plan.lists = lists
    return plan.stateful


def take(game, outputs: bool = False, reuse: Snapshot | None = None, view: bool = False) -> Snapshot:
    """The Game's state now (between two updates); with ``outputs``, also the last
    update's outputs (poses, bones, events, released ids). ``reuse``: an older snapshot
    of this Game that is given up (a ring of rollback states), whose arrays are written
    over instead of new ones (no new memory per snapshot). ``view``: the Game's own arrays
    and values, not copies, for a state read at once (a checksum) and never kept.
    Original: none (ours)."""
    if game.closed:
        game._open()                                  # (raises GameClosed)
    old = reuse._state if isinstance(reuse, Snapshot) and reuse._state is not None and \
        reuse._game is not None and reuse._game() is game else None
    plan = _plan(game)
    if plan.ais is not None:
        fr = game.fight
        if fr.controllers != fr._seated:            # an AI added since: its row, before the copy
            fr.seat_controllers()
    engine_state: Any
    arena = None
    if game.engine == "reference":
        engine_state = S.save_reference(game.player, _instances(game))
    else:
        # the seven tables in one copy, through the engine's save (the body and combat
        # tables lie in the same arena)
        engine_state = S.save_engine(game.player, _loose(game), outputs,
                                     old.engine_state if old is not None and old.engine == "compiled" else None,
                                     view=view, arena=plan.arena)
        arena = engine_state.arena
    ctx = game.ctx
    c: dict[str, Any] = {}
    if outputs:
        poses = ctx.poses
        c = {
            "poses": None if poses is None else (poses.vel.copy(), poses.root.copy(), poses.rot.copy(),
                                                 poses.tag.copy()),
            "bone_pos": None if ctx.bone_pos is None else ctx.bone_pos.copy(),
            "bone_rot": None if ctx.bone_rot is None else ctx.bone_rot.copy(),
        }
    entity_next = _entity_next(game.world)
    ai_rows = plan.ais
    ais = None
    bodies: Any
    combats: Any
    if view:
        bodies = (S.save_table(ctx.bodies, view=True), ctx.bodies.owners)
        combats = (S.save_table(ctx.combats, view=True), ctx.combats.owners, ctx.combats.texts)
        if ai_rows is not None:
            ais = S.save_table(ai_rows, view=True)
    elif arena is not None:
        # the older state's parts where they hold the same (its copy of the arena written
        # over, the owners and texts unchanged: a rollback ring's usual case)
        bodies, combats = old.bodies if old is not None else None, old.combats if old is not None else None
        if bodies is None or bodies[0] is not arena[2][5] or bodies[1] != ctx.bodies.owners:
            bodies = (arena[2][5], dict(ctx.bodies.owners))
        if combats is None or combats[0] is not arena[2][6] or combats[1] != ctx.combats.owners or \
                combats[2] != ctx.combats.texts:
            combats = (arena[2][6], dict(ctx.combats.owners), list(ctx.combats.texts))
        if ai_rows is not None:
            ais = arena[2][7]
    else:
        bodies = (S.save_table(ctx.bodies, old.bodies[0] if old is not None else None), dict(ctx.bodies.owners))
        combats = (S.save_table(ctx.combats, old.combats[0] if old is not None else None),
                   dict(ctx.combats.owners), list(ctx.combats.texts))
        if ai_rows is not None:
            ais = S.save_table(ai_rows, old.ais if old is not None else None)
    if ais is not None:
        # the AIs' states are rows of the copy just taken (the fight's state names them)
        fight = game.fight.save_state(ais)
    else:
        fight = game.fight.save_state() if game.fight is not None and hasattr(game.fight, "save_state") else None
    log = game.fight.save_log() if fight is not None and not view and hasattr(game.fight, "save_log") else None
    extras = [fn.save_state() for fn in _stateful(game, plan)]
    names = game.names
    version, kept, humans, joins = plan.names
    if version != names.version or kept is None:
        kept = dict(names)
        humans = tuple(kept)
        joins = dict(names.joins)
        plan.names = (names.version, kept, humans, joins)
    state = _State(game.engine, ctx.updates_run, ctx.update, kept, entity_next, engine_state, c,
                   bodies, combats, fight, extras, log, ais, joins, names.lineage)
    # (a Snapshot made here at once: the Game's weak reference and the names' tuple kept)
    snap = Snapshot.__new__(Snapshot)
    snap._state, snap._parsed, snap._game = state, None, plan.game_ref
    snap.update, snap.humans, snap.engine = state.updates_run, humans, state.engine
    return snap


def restore(game, snap: Snapshot) -> None:
    """Write ``snap`` back into ``game`` (see the module docstring for what is refused)."""
    if game.closed:
        game._open()                                  # (raises GameClosed)
    if not isinstance(snap, Snapshot):
        raise SnapshotError(f"Game.restore: expected a Snapshot, got {type(snap).__name__}")
    if snap.engine != game.engine:
        raise SnapshotError(f"Game.restore: a snapshot of the {snap.engine!r} engine on a {game.engine!r} Game")
    plan = _plan(game)
    st = snap._state
    ref = snap._game
    # this Game's own snapshot (trusted): taken through this plan, or through an older one of this Game
    own = st is not None and ref is not None and (ref is plan.game_ref or ref() is game)
    if not own:
        st = snap._resolved(game)                    # (a file's, checked; another Game's: refused)
    assert st is not None
    # -- every check first: nothing changes on a refusal
    names = game.names
    kept = plan.names
    # the names as the snapshot holds them: its names are the copy the plan keeps for the
    # names' version now (a rollback ring's usual case: no human came or went), or equal
    same = (st.names is kept[1] and kept[0] == names.version) or names == st.names
    alive = names if same else dict(game.humans())
    if not same:
        for name, ent in st.names.items():
            if alive.get(name) != ent:
                raise SnapshotError(f"Game.restore: human {name!r} (entity {ent}) is not in the world as it was "
                                    f"at update {st.updates_run}: a human removed after a snapshot cannot come back")
    if st.joins is not None and st.lineage != names.lineage:
        now = names.joins
        for name, j in st.joins.items():
            if now.get(name) != j:
                raise SnapshotError(f"Game.restore: human {name!r} (entity {st.names.get(name)}) left and was added "
                                    f"again after the snapshot at update {st.updates_run}: the snapshot holds the "
                                    "human that left, which cannot come back")
    fr = game.fight
    fs = st.fight
    if (fs is None) != (fr is None or not hasattr(fr, "save_state")):
        raise SnapshotError("Game.restore: the snapshot was taken " + ("without" if fs is None else "with")
                            + " fight rules, this Game has " + ("them" if fs is None else "none"))
    # a file's state was checked in full when it was read (snapfile.to_state); the Game's own
    # snapshots are its own data: their shape only (a Fight's: its controllers' count)
    if fs is not None and own:
        ctl = getattr(fr, "controllers", None)
        if ctl is None or fs.__class__ is not tuple or len(fs) != 6 or fs[5].__class__ is not tuple or \
                len(fs[5]) != len(ctl):
            fits = getattr(fr, "state_fits", None)
            why = fits(fs, trusted=True) if fits is not None else None
            if why is not None:
                raise SnapshotError(f"Game.restore: the fight rules' state does not fit: {why}")
    extras = _stateful(game, plan)
    if len(extras) != len(st.extras):
        raise SnapshotError(f"Game.restore: {len(st.extras)} stateful actions saved, this Game runs {len(extras)}")
    ctx = game.ctx
    # (a file's state fits this Game's tables: snapfile.to_state made each block of the
    # file's rows by this Game's own tables' columns, at the file's capacity)
    # -- humans added after the snapshot leave
    moved = False                                    # the crowd's structure changed: the systems' lists go
    if not same:
        leaving = [n for n in list(alive) if n not in st.names]
        for name in leaving:
            game.remove_human(name)
        moved = bool(leaving)
    # -- the engine
    copied = False
    if st.engine == "reference":
        S.load_reference(game.player, st.engine_state)
    else:
        # this Game's own snapshot of the tables as they lie now: their bytes in one copy
        copied = S.load_engine(game.player, st.engine_state, False,      # the layouts checked above
                               snap._parsed is not None, plan.arena)
    c = st.ctx
    _set = object.__setattr__                        # (numbers it gave, and Nones: not checked again)
    _set(ctx, "updates_run", st.updates_run)
    _set(ctx, "update", st.update)
    if c:                                            # the last update's outputs were saved
        _outputs_back(ctx, c)
    if ctx.fired is not None:
        _set(ctx, "fired", None)
    if ctx.failures:
        _set(ctx, "failures", [])
    bodies, combats = ctx.bodies, ctx.combats
    if not copied:
        S.load_table(bodies, st.bodies[0], check=False)
        S.load_table(combats, st.combats[0], check=False)
        if st.ais is not None:
            assert plan.ais is not None                  # (the plan seats the AI rows it saved)
            S.load_table(plan.ais, st.ais, check=False)
    saved = st.combats
    if combats.texts != saved[2]:
        _texts_back(combats, saved[2])
    # a view moved (added, removed, rehomed), or a file's rows: the views take their rows'
    # generations as the file gives them
    if bodies.owners != st.bodies[1] or not own:
        moved = True
        _owners_back(bodies, st.bodies[1])
    if combats.owners != saved[1] or not own:
        moved = True
        _owners_back(combats, saved[1])
    _entity_next_back(game.world, st.entity_next)
    if not same and names != st.names:
        moved = True
        names.clear()
        names.update(st.names)
    if st.joins is None or st.lineage != names.lineage:     # (the same lineage: the same joins, nothing to do)
        names.restore_joins(st.joins, st.lineage)
    if moved:
        # the crowd's rows (body rows, pose columns) are read again at the next update;
        # with the same humans and every view on its row they still hold, so a rollback's
        # first update does not read them again
        ctx.crowd.invalidate()
    if fs is not None:
        fr.load_state(fs)
        if st.fight_log is not None and hasattr(fr, "load_log"):
            fr.load_log(st.fight_log)
    for fn, s in zip(extras, st.extras):
        fn.load_state(s)


def _outputs_back(ctx, c: dict) -> None:
    """The last update's poses and bones as saved (a snapshot taken with ``outputs``)."""
    if c["poses"] is None:
        ctx.poses = None
    else:
        p = ctx.poses
        if p is not None and p.rot.shape == c["poses"][2].shape:
            for dst, src in zip((p.vel, p.root, p.rot, p.tag), c["poses"]):
                np.copyto(dst, src)
        else:
            from scuffle.anim.maths.pose import PoseBatch
            ctx.poses = PoseBatch(*(a.copy() for a in c["poses"]))
    for name in ("bone_pos", "bone_rot"):
        saved, now = c[name], getattr(ctx, name)
        if saved is None:
            setattr(ctx, name, None)
        elif now is not None and now.shape == saved.shape:
            np.copyto(now, saved)
        else:
            setattr(ctx, name, saved.copy())


def _owners_back(table, owners: dict) -> None:
    """The table's views as saved, each on its row with the row's generation as saved."""
    table.owners.clear()
    table.owners.update(owners)
    for row, view in owners.items():
        view.rebind(table, row)


def _texts_back(table, texts: list) -> None:
    """The combat table's text codes after a restore: the saved rows' codes mean the saved
    ``texts``; where this table numbers a text otherwise (a snapshot read on another
    Game), the state and role columns are renumbered."""
    cur = table.texts
    if cur == texts:                                 # no text came since: nothing to do
        return
    if len(cur) >= len(texts) and all(a == b for a, b in zip(cur, texts)):
        del cur[len(texts):]                        # the texts the abandoned future added
        table._codes = {t: i for i, t in enumerate(cur)}
        return
    mapping = np.array([table.code(t) for t in texts], dtype=np.int32)
    if (mapping != np.arange(len(texts), dtype=np.int32)).any():
        for col in ("state", "role"):
            a = getattr(table, col)
            a[:] = mapping[np.clip(a, 0, len(texts) - 1)]


def checksum(game) -> str:
    """A digest of the Game's whole state, equal to Snapshot.checksum of a snapshot taken
    now, computed without copying it (the compiled engine: snapfile.checksum_game over
    the Game's own tables and lists; snapfile.checksum of a snapshot's view where a human
    was never stepped or the step's entries are pending)."""
    if game.engine == "compiled":
        if game.closed:
            game._open()                                  # (raises GameClosed)
        plan = _plan(game)
        got = F.checksum_game(game, _entity_next(game.world), _stateful(game, plan), plan.arena, plan)
        if got is not None:
            return got
        return F.checksum(game, take(game, view=True)._state)
    return take(game).checksum()


# ---------------------------------------------------------------- the digest's encoding
_VALUES = frozenset({type(None), bool, int, float, str, bytes, tuple, list, dict, complex})


class _HashOut:
    """A file that feeds what is written to a hash."""

    __slots__ = ("write",)

    def __init__(self, h):
        self.write = h.update


class _Digest(pickle.Pickler):
    """Pickles a state into a hash canonically: plain values by value (no memo, so equal
    states give equal bytes whatever objects they share), arrays by their dtype, shape
    and bytes, sets sorted, random generators by their state, and the world's objects by
    what identifies them (a task or cursor handle by its row and generation, a human by
    its name, a view by its row, a fired event by its content, the rest by its type)."""

    def __init__(self, h):
        super().__init__(_HashOut(h), protocol=5)
        self.fast = True
        self._h = h

    def persistent_id(self, v):
        t = type(v)
        if t in _VALUES:
            return None
        if t is np.ndarray:
            a = np.ascontiguousarray(v)
            self._h.update(a.view(np.uint8).reshape(-1) if a.size else b"")
            return ("A", a.dtype.str, a.shape)
        if isinstance(v, np.generic):
            return ("G", v.dtype.str, v.tobytes())
        if t is set or t is frozenset:
            return ("S", tuple(sorted(v, key=repr)))
        if isinstance(v, enum.Enum):
            return ("N", t.__name__, v.value)
        if isinstance(v, random.Random):
            return ("R", v.getstate())
        if t in (deque, Counter):
            return ("Q", tuple(v) if t is deque else tuple(sorted(v.items())))
        if hasattr(v, "_fields") or (dataclasses.is_dataclass(v) and not isinstance(v, type)):
            return None                               # a NamedTuple (a Callback) or a dataclass: by value
        if hasattr(v, "trow") and hasattr(v, "tgen"):
            return ("T", t.__name__, v.trow, v.tgen)
        if isinstance(v, Cursor):
            return ("C", v.row, v.gen)
        if isinstance(v, FiredEvent):
            return ("E", v.anim_id, v.event.frame, int(v.event.type), self.persistent_id(v.task))
        if hasattr(v, "anim_set") and hasattr(v, "record") and hasattr(v, "name"):
            return ("H", v.name)
        if isinstance(v, (Body, Combat)):
            return ("V", t.__name__, v._row)
        if t.__module__.startswith("scuffle.anim.reference") and not callable(v):
            return ("R", t.__name__, tuple((k, x) for k, x in S._fields_of(v)
                                           if k not in ("clip", "anim_set") and not callable(x)))
        return ("O", t.__module__, t.__qualname__)


def _digest(game, state: _State) -> str:
    """The state's digest, without the last update's outputs (no later update reads them):
    the compiled engine's by snapfile.checksum, the reference engine's (its state is its
    objects) by _Digest."""
    if state.engine == "compiled":
        return F.checksum(game, state)
    h = hashlib.sha256()
    values = []
    for f in dataclasses.fields(state):
        v = getattr(state, f.name)
        if f.name in ("ctx", "fight_log"):
            continue
        if f.name == "engine_state" and isinstance(v, S.EngineState):
            v = dataclasses.replace(v, outputs=None)
        values.append(v)
    _Digest(h).dump(values)
    return h.hexdigest()


# ---------------------------------------------------------------- the rollback sync test
class SyncError(AssertionError):
    """The rollback sync test found a state that a restore and a replay did not give back:
    the message names the update, the rollback distance and the parts that differ."""


@dataclasses.dataclass(slots=True)
class SyncReport:
    """What ``sync_test`` checked: ``updates`` run, ``rollbacks`` made, ``replayed``
    updates compared (each by its whole state's checksum), and ``checksum``, the state's
    digest at the end (equal to a run without rollbacks)."""

    updates: int
    rollbacks: int
    replayed: int
    checksum: str


def parts(snap: Snapshot) -> dict[str, str]:
    """The digest of each part of a snapshot (the engine's tables and values one by one,
    the bodies, the components, the fight, each stateful action): where two states
    differ, the names of the parts say where."""
    if snap._state is None:
        raise SnapshotError("parts: a snapshot read from bytes; restore it and take one")
    st = snap._state
    out: dict[str, str] = {}

    def put(name: str, v) -> None:
        h = hashlib.sha256()
        _Digest(h).dump(v)
        out[name] = h.hexdigest()

    for f in dataclasses.fields(st):
        v = getattr(st, f.name)
        if f.name == "engine_state" and isinstance(v, S.EngineState):
            for k, x in v.tables.items():
                put(f"engine.tables.{k}", x)
            for k, x in zip(("pool", "deferred", "pending", "stepped", "stats", "calls"), v.player):
                put(f"engine.player.{k}", x)
            # the humans by name (the seats name them by serial, their arrangement by an id
            # that a replay's own arrangement does not share)
            kh, pc, leaving, _ = v.batch
            put("engine.batch", (kh, pc, leaving, [None if i is None else i.name for i in v.instances]))
            put("engine.humans", v.humans)
            for x, values in v.loose:                    # (the others' values are rows of engine.humans)
                put(f"engine.loose.{S.instance_of(x).name if x.__class__ is int else x.name}", values)
        elif f.name == "extras":
            for i, x in enumerate(v):
                put(f"extras[{i}]", x)
        elif f.name == "ais":
            continue                     # (each AI's row is in the fight's part, by value)
        elif f.name == "fight" and v.__class__ is tuple and len(v) == 6 and v[5].__class__ is tuple:
            # an AI's state as its row's values (an AIRow names a copy of the table, whose
            # state ids are this process's)
            put(f.name, (*v[:5], tuple([x.state() if x.__class__.__name__ == "AIRow" else x for x in v[5]])))
        else:
            put(f.name, v)
    return out


def sync_test(build, updates: int, distances=range(1, 9), *, pose: bool = True, straight: bool = True) -> SyncReport:
    """GGPO's SyncTest on a Game: after every update, roll back ``k`` updates (``k`` taken
    in turn from ``distances``), replay them, and check the whole state's checksum after
    each replayed update against the first pass; at the end, check that the run (trace
    records, poses included, and checksum) ends where a run without rollbacks ends.

    In: ``build()`` -> (game, step): a Game set up the same way at each call and the
    function that runs one of its updates (``game.step``, or a host's step around it).
    Raises SyncError naming the update, the distance and the differing parts. Anything a
    game keeps outside the snapshot (a closure's variable, a Python list, a generator)
    fails it. Original: none (ours).
    """
    from scuffle.game.runtime.trace import iter_trace_records, write_records

    ks = [int(k) for k in distances]
    if not ks or min(ks) < 1:
        raise ValueError(f"sync_test: distances {ks!r} must be >= 1")
    game, step = build()
    try:
        snaps: dict[int, Snapshot] = {}
        sums: dict[int, str] = {}
        traces: dict[int, str] = {}

        def record() -> None:
            buf = io.StringIO()
            write_records(buf, iter_trace_records(game, pose=pose))
            traces[game.update - 1] = buf.getvalue()

        rollbacks = replayed = 0
        keep = max(ks) + 1
        snaps[game.update] = game.snapshot()
        for u in range(updates):
            step()
            record()
            now = game.update
            snaps[now] = first = game.snapshot()
            sums[now] = first.checksum()
            snaps.pop(now - keep, None)
            k = ks[u % len(ks)]
            back = now - k
            if back not in snaps:
                continue
            game.restore(snaps[back])
            rollbacks += 1
            for j in range(back, now):
                step()
                record()
                replayed += 1
                again = game.snapshot()
                if again.checksum() != sums[j + 1]:
                    a, b = parts(snaps[j + 1]), parts(again)
                    diff = ", ".join(n for n in a if a[n] != b.get(n)) or "none"
                    raise SyncError(f"update {j} replayed after a rollback of {k} (from update {now - 1} to "
                                    f"{back}) gives another state than its first pass; parts that differ: {diff}")
        final = game.checksum()
        trace = "".join(traces[u] for u in sorted(traces))
    finally:
        game.close()
    if straight:
        g2, step2 = build()
        try:
            out = io.StringIO()
            for _ in range(updates):
                step2()
                write_records(out, iter_trace_records(g2, pose=pose))
            if g2.checksum() != final:
                raise SyncError(f"after {updates} updates the run with rollbacks ends in another state than the "
                                "run without them")
            if out.getvalue() != trace:
                la, lb = out.getvalue().splitlines(), trace.splitlines()
                i = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
                raise SyncError(f"the trace with rollbacks differs from the trace without them at line {i + 1}")
        finally:
            g2.close()
    return SyncReport(updates, rollbacks, replayed, final)


_KEPT_STATES = 16        # a rollback ring's depth and then some


_BASE_RANDOM, _BASE_GETRANDBITS = random.Random.random, random.Random.getrandbits
_BASE_GAUSS, _BASE_SETSTATE = random.Random.gauss, random.Random.setstate


class SavedRandom(random.Random):
    """A ``random.Random`` that a snapshot saves cheaply: ``save_state()`` gives its state
    and reads the 2.5 kB Mersenne Twister state again only when a number was drawn since
    the last save (``getstate`` costs ~13 us; an AI that thinks every few updates draws
    rarely): every way of drawing, ``gauss`` and ``setstate`` mark the state changed.
    ``load_state(state)`` puts one back. Same numbers as random.Random."""

    def __init__(self, seed=None):
        self._saved = None
        # the words of the states saved lately, as getstate gave them (id(state) -> (state,
        # words)): a rollback's load of a state saved a few updates ago skips the unpacking
        self._words: dict = {}
        super().__init__(seed)

    def seed(self, *args, **kwargs) -> None:
        self._saved = None
        super().seed(*args, **kwargs)

    # (the base class's methods called directly: super() would cost a third of a draw)
    def random(self) -> float:
        self._saved = None
        return _BASE_RANDOM(self)

    def getrandbits(self, k: int) -> int:
        self._saved = None
        return _BASE_GETRANDBITS(self, k)

    def gauss(self, mu: float = 0.0, sigma: float = 1.0) -> float:
        # every other call draws nothing: it hands out the number the call before kept
        # (gauss_next), which changes the state all the same
        self._saved = None
        return _BASE_GAUSS(self, mu, sigma)

    def setstate(self, state: tuple) -> None:
        self._saved = None
        _BASE_SETSTATE(self, state)

    def save_state(self) -> tuple:
        """The generator's state (kept from the last save when nothing was drawn since):
        (version, the 625 words as bytes, the gauss value)."""
        s = self._saved
        if s is None:
            version, words, gauss = self.getstate()
            s = self._saved = (version, struct.pack(f"<{len(words)}I", *words), gauss)
            kept = self._words
            if len(kept) >= _KEPT_STATES:
                del kept[next(iter(kept))]
            kept[id(s)] = (s, words)
        return s

    def load_state(self, state: tuple) -> None:
        """Put back a ``save_state`` (nothing to do when it is, or equals, the state it
        holds: no number drawn since that save)."""
        if state is not self._saved and state != self._saved:    # (equal: a file's copy of the state it holds)
            version, words, gauss = state
            hit = self._words.get(id(state))
            unpacked = hit[1] if hit is not None and hit[0] is state else \
                struct.unpack(f"<{len(words) // 4}I", words)
            if version == 3:                      # (random.Random.setstate's own two steps, at once)
                self.gauss_next = gauss
                super(random.Random, self).setstate(unpacked)     # (the generator's C state)
            else:
                self.setstate((version, unpacked, gauss))
            self._saved = state
