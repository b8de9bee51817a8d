"""Prepared commands issued many at once, as columns (``Player.commands``).

A game that commands a crowd issues many prepared commands an update (Player.prepare,
anim.playback.recipe). ``Player.run`` checks each at its call in Python; ``commands``
takes them as columns (a command per row, the human per row, the numbers per row) and
checks them all in one compiled call (anim.engine.cmdkernel.buffer_commands: the direct
path's checks of anim.playback.prepared, on each human's row), which writes each row it
can as a row of the command buffer (anim.playback.cmdbuffer: written before anything
reads what it changes, anim.engine.writefirst). A row the compiled checks cannot be sure
of (a command or id not learnt yet, a stack near a limit, a number out of range, a human
that left, a command with end callbacks...) goes through ``Player.run`` itself, in its
place, and the call goes on after it: so a batch leaves the tables bit for bit as
``run`` called row by row, in order, would.

Refusals are per row: a row ``run`` refuses raises what ``run`` raises (the same class
and message), with ``row`` (its index) set on the exception and a note naming the row;
the rows before it are written, nothing of it is taken, the rows after it are not run (a
game resumes from ``row + 1``). The columns themselves are checked first, before any row
runs (RecipeError naming the field and row).

A part the Player owns (``Player.columns``), over its prepared commands (RecipeRules:
their templates, views and buffer) and the human table.

May import: numpy, anim.base, anim.engine, anim.playback.recipe / prepared.

Spec: "Animation tasks", "The task stack". Original: none (ours: the original runs each
command at its call; the rows and their order are the same).
"""
from __future__ import annotations

from itertools import chain
import operator
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from scuffle.anim.base.errors import StaleHandle
from scuffle.anim.engine import cmdkernel as CK
from scuffle.anim.engine.kernel_types import BufTables, CmdBatch, CmdBuffer, CmdPlans
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.engine.trusted import first_call
from scuffle.anim.playback.recipe import _BLENDS, _GAIT, Arg, Command, RecipeError

if TYPE_CHECKING:  # pragma: no cover
    from scuffle.anim.playback.prepared import RecipeRules

__all__ = ["CommandColumns"]

_slot, _record, _anim_set, _engine = (attrgetter(a) for a in ("slot", "record", "anim_set", "engine"))
_table, _row, _gen = (attrgetter(a) for a in ("table", "row", "gen"))

_EMPTY = np.zeros((0, 0), np.float64)
_INT64 = np.dtype(np.int64)                        # (numpy's one native int64 dtype: an identity test)
_ROWS = (tuple, list)


def _stale(call: str, bad: int, r: np.ndarray, g: np.ndarray, done: str) -> StaleHandle:
    """The refusal of a batch's row ``bad`` whose human row ``r[bad]`` no longer holds the
    generation ``g[bad]``: StaleHandle naming both, with ``row`` set and a note."""
    exc = StaleHandle(f"{call}: row {bad}: human row {int(r[bad])} does not hold generation "
                      f"{int(g[bad])} (its human left, or the row holds another now)")
    exc.row = bad                                  # type: ignore[attr-defined]
    exc.add_note(f"{call}: row {bad} (of the batch) was refused; the rows before it were {done}")
    return exc


class _Entry:
    """One prepared command on one anim set: its row of the plans (``e``), the objects it
    is for (kept so their ids stay theirs), and which of its Arg positions are anim ids."""

    __slots__ = ("e", "command", "anim_set", "id_args", "n_params")

    def __init__(self, e: int, command: Command, anim_set: Any):
        self.e, self.command, self.anim_set, self.n_params = e, command, anim_set, command.n_params
        self.id_args = frozenset(st[1].pos for st in command.steps if st[0] not in _BLENDS and st[1].__class__ is Arg)


class CommandColumns:
    """``commands`` and ``set_gait_targets`` (the module docstring): prepared commands and
    gait targets as columns. In: the Player's prepared commands (RecipeRules) and the
    Player (whose ``run`` takes a row the compiled checks leave). A plan row is kept per
    Command and anim set a batch has named, while the Player lives (a game prepares its
    few commands once, as for ``run``)."""

    def __init__(self, rules: RecipeRules, host: Any):
        self.rules = rules
        self.host = host
        self.stores = rules.stores
        self.options = rules.options           # (the Player gives new ones to every part; the plans follow rules')
        self._entries: dict[tuple[int, int], _Entry] = {}
        # per anim set (by id, kept alive by its entries): each command's plan row, and the
        # most numbers any of them takes (a batch of known commands maps in one pass)
        self._by_set: dict[int, list] = {}
        self._pi = np.zeros((8, CK.PI_WIDTH), np.int64)
        self._pf = np.zeros((8, CK.PF_WIDTH), np.float64)
        self._lut = np.zeros((1, 2), np.int64)
        self._learnt = -1                      # rules.learnt when the plans were made
        self._options: Any = None              # the options they were made under
        self._mark = np.zeros(0, np.int64)     # per human row: the stamp of a command waiting
        self._cnt = np.zeros(CK.CN_WIDTH, np.int64)
        self._entry_fn: Any = None
        self._released: tuple = (None, None)      # the task table's released flags and their int8 view
        self._fixed: tuple = (None, (), None)      # (the views' tuple, buffer_commands' first arguments, the buffer)
        self._targets_fn: Any = None
        self.rows_buffered = 0                 # rows the compiled checks made buffer rows (tests, the bench)
        self.rows_run = 0                      # rows that went through Player.run

    def commands(self, commands: Sequence[Command], humans: Sequence[Any], args: Any = None) -> None:
        """Run prepared commands as columns: row ``i`` runs ``commands[i]`` on ``humans[i]``
        (a CharacterInstance) with the first ``commands[i]``'s n_params numbers of
        ``args[i]`` as its params, as ``Player.run(humans[i], commands[i], *params)`` would,
        in row order (the module docstring). ``args``: a 2-D array-like of numbers, one row
        per command and at least as many columns as the most params a command takes (None:
        no command takes any); an Arg that is an anim id takes a whole number (an IntEnum
        is one), passed to ``run`` as an int; the others as floats.
        Rejected before any row runs (RecipeError naming the field and row): columns of
        different lengths, ``args`` not 2-D numbers or too narrow for a row's command, a
        row's command that is not a Command (Player.prepare) or takes an end callback as
        an Arg (a callback is not a number). Then per row: what ``run`` raises for that row,
        with ``row`` set on the exception (the rows before it written, the rest not run)."""
        n = len(humans)
        if len(commands) != n:
            raise RecipeError(f"commands: {len(commands)} commands for {n} humans (one each)")
        if n == 0:
            return
        a = self._args(args, n)
        width = a.shape[1]
        rules = self.rules
        if rules.learnt != self._learnt or rules.options is not self._options:
            self._refresh()
        slots, ents, new = self._rows(commands, humans, self._entries, width)
        if new:                                    # a new command or set: the plans made again
            self._refresh()
        self._run(commands, humans, a, slots, ents)

    def rows_of(self, humans: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """Each human's row of the human table and that row's generation, as two int64
        columns: what ``commands_at`` names the humans by (a game keeps them beside its own
        columns of its crowd, and reads them again for a human that joins). A human this
        Player does not hold yet gets its row now, as its first task would give it. In:
        CharacterInstances. Rejected: anything else (RecipeError naming its index), a human
        another world's Player holds (ValueError, as a task for it raises)."""
        eng = self.rules.batch
        gen = eng.humans.gen
        n = len(humans)
        rows = np.empty(n, np.int64)
        gens = np.empty(n, np.int64)
        for i, inst in enumerate(humans):
            if not isinstance(inst, CharacterInstance):
                raise RecipeError(f"rows_of: humans[{i}] must be a CharacterInstance, got {type(inst).__name__}")
            s = eng._row(inst)
            rows[i] = s
            gens[i] = gen[s]
        return rows, gens

    def commands_at(self, commands: Sequence[Command], rows: Any, gens: Any, args: Any = None) -> None:
        """``commands`` with the humans named by their rows and generations (``rows_of``)
        instead of their instances: row ``i`` runs ``commands[i]`` on the human at row
        ``rows[i]`` of the human table, which must still hold the generation ``gens[i]``,
        with the numbers ``args[i]``, as ``commands`` would (the same rows, the same
        refusals). No human's instance, record or slot is read: the generations are checked
        as columns, and each row's anim set is read from the engine's seats.
        Rejected before any row runs (RecipeError naming the field): ``rows`` or ``gens``
        not one whole number per command; then what ``commands`` rejects. A row whose
        generation is stale (its human left; the row may hold another now) or that names
        no seated human: StaleHandle naming the row and the human row, with ``row`` set on
        it, the rows before it written, the rest not run; as ``commands``, a row ``run``
        refuses raises what ``run`` raises, with ``row`` set."""
        n = len(commands)
        r = self._whole(rows, n, "rows")
        g = self._whole(gens, n, "gens")
        if n == 0:
            return
        a = self._args(args, n)
        width = a.shape[1]
        slots, insts, bad = self._seated(r, g, n)
        if bad:
            cmds = commands if bad == n else commands[:bad]
            rules = self.rules
            if rules.learnt != self._learnt or rules.options is not self._options:
                self._refresh()
            ents, new = self._plans(cmds, insts, width)
            if new:
                self._refresh()
            self._run(cmds, insts, a if bad == n else a[:bad], slots, ents, r if bad == n else r[:bad])
        if bad < n:
            # (the entries' checks of a row's command come first, as ``commands`` checks its columns)
            raise _stale("commands_at", bad, r, g, "run")

    def _seated(self, r: np.ndarray, g: np.ndarray, n: int) -> tuple[list[int], list[Any], int]:
        """The human rows ``r`` checked against their generations ``g`` (a list compare
        while all agree): the rows up to the first stale or free one, their instances (the
        engine's seats), and that first one's index (``n``: none)."""
        eng = self.rules.batch
        seats = eng._instances
        gen = eng.humans.gen                       # (a list: read by the rows named, not whole)
        slots = r.tolist()
        want = g.tolist()
        top = min(len(seats), len(gen))
        if min(slots) >= 0 and max(slots) < top:
            now = list(map(gen.__getitem__, slots))
            bad = n if now == want else next(i for i, (x, y) in enumerate(zip(now, want)) if x != y)
        else:
            bad = next(i for i, (s, w) in enumerate(zip(slots, want)) if not (0 <= s < top and gen[s] == w))
        if bad < n:
            del slots[bad:]
        insts = list(map(seats.__getitem__, slots))
        if None in insts:                           # a free row holding the generation given
            bad = insts.index(None)
            del slots[bad:], insts[bad:]
        return slots, insts, bad

    @staticmethod
    def _whole(col: Any, n: int, what: str, call: str = "commands_at", per: str = "command") -> np.ndarray:
        """``col`` as ``n`` int64s (RecipeError naming the field: not one whole number a row)."""
        if col.__class__ is np.ndarray and col.dtype is _INT64 and col.shape == (n,):
            return col                              # (a game's own column: as it is)
        try:
            v = np.asarray(col)
        except (TypeError, ValueError):
            v = None
        if v is None or v.shape != (n,) or not (v.dtype.kind in "iu" or (n == 0 and v.dtype.kind == "f")):
            raise RecipeError(f"{call}: {what} must be {n} whole numbers, one per {per}")
        if v.dtype.kind == "u" and n and int(v.max()) >= 1 << 63:
            raise RecipeError(f"{call}: {what} must be {n} whole numbers, one per {per}")
        return v.astype(np.int64, copy=False)

    def _plans(self, commands: Sequence[Command], insts: list, width: int) -> tuple[list[int], bool]:
        """Each row's plan row (``_rows`` for humans already checked seated), and whether a
        (command, set) got its plan row now."""
        entries = self._entries
        n = len(insts)
        sets = list(map(_anim_set, insts))
        s0 = sets[0]
        new = False
        if sets.count(s0) == n:
            return self._entries_one_set(commands, s0, entries, width)
        ents: list[int] = []
        for i, (cmd, st) in enumerate(zip(commands, sets)):
            ent = entries.get((id(cmd), id(st)))
            if ent is None:
                ent = self._new_entry(i, cmd, st)
                new = True
            if ent.n_params > width:
                raise RecipeError(f"commands: args[{i}] has {width} numbers, {cmd.recipe!r} takes {ent.n_params}")
            ents.append(ent.e)
        return ents, new

    def set_gait_targets(self, humans: Sequence[Any], targets: Any) -> np.ndarray:
        """Give each human's running gait (``Player.running(humans[i], TaskType.GAIT)``: the
        newest unreleased gait on its stack) the target ``targets[i]``, as its handle's
        ``set_target`` does (clamped to 0-4, rounded unless the task's CONTINUOUS flag), in
        row order, in one compiled call (anim.engine.cmdkernel.gait_targets). Out: a bool
        per row, True where a gait took the target, False where none runs (a game starts a
        walk there). Nothing is taken or given back, so the rows' order against other
        commands does not matter. Rejected: ``targets`` not one number per human
        (RecipeError naming the field); a target that is not finite: ValueError as
        ``set_target`` raises it, with ``row`` set (the rows before it done, the rest not).
        Original: 0x0010a500 (+0xac)."""
        n = len(humans)
        tg = self._targets(targets, n, "set_gait_targets", "human")
        moved = np.zeros(n, np.bool_)
        if n == 0:
            return moved
        eng = self.rules.batch
        slots = list(map(_slot, humans))
        seats = eng._instances
        held = list(map(seats.__getitem__, slots)) if min(slots) >= 0 and max(slots) < len(seats) else None
        if held is not None and list(map(_engine, humans)).count(eng) == n \
                and list(map(operator.is_, held, humans)).count(True) == n:
            okv = np.ones(n, np.int8)
        else:                                      # each human checked: the others through Player.running
            okv = np.fromiter((inst.engine is eng and 0 <= s < len(eng._instances) and eng._instances[s] is inst
                               for inst, s in zip(humans, slots)), np.int8, n)
            slots = [s if k else 0 for s, k in zip(slots, okv.tolist())]
        self._gait_rows(humans, slots, None, okv, tg, moved, n, "set_gait_targets")
        return moved

    def set_gait_targets_at(self, rows: Any, gens: Any, targets: Any) -> np.ndarray:
        """``set_gait_targets`` with the humans named by their rows and generations
        (``rows_of``) instead of their instances, as ``commands_at`` names them: row ``i``
        gives the running gait of the human at row ``rows[i]`` of the human table, which
        must still hold the generation ``gens[i]``, the target ``targets[i]``, in row order,
        in one compiled call; no human's instance is read (the generations are checked as
        columns). Out: a bool per row, True where a gait took the target. Rejected before
        any row (RecipeError naming the field): ``targets`` not a 1-D column of numbers,
        ``rows`` or ``gens`` not one whole number per target. Then per row: a stale
        generation (its human left) or a row no human holds: StaleHandle naming the row and
        the human row; a target that is not finite: ValueError as ``set_target`` raises it;
        either with ``row`` set, the rows before it done, the rest not.
        Original: 0x0010a500 (+0xac)."""
        tg = self._targets(targets, -1, "set_gait_targets_at", "row")
        n = tg.shape[0]
        r = self._whole(rows, n, "rows", "set_gait_targets_at", "target")
        g = self._whole(gens, n, "gens", "set_gait_targets_at", "target")
        moved = np.zeros(n, np.bool_)
        if n == 0:
            return moved
        slots, insts, bad = self._seated(r, g, n)
        if bad:
            ok = np.ones(bad, np.int8)
            self._gait_rows(insts, slots, r if bad == n else r[:bad], ok, tg if bad == n else tg[:bad],
                            moved if bad == n else moved[:bad], bad, "set_gait_targets_at")
        if bad < n:
            raise _stale("set_gait_targets_at", bad, r, g, "done")
        return moved

    @staticmethod
    def _targets(targets: Any, n: int, call: str, per: str) -> np.ndarray:
        """``targets`` as a 1-D float64 column (``n`` numbers; -1: as many as given) the
        compiled call takes (RecipeError naming the field)."""
        try:
            tg = np.fromiter(targets, np.float64, n) if targets.__class__ is list else \
                np.ascontiguousarray(targets, dtype=np.float64)
        except (TypeError, ValueError):
            what = f"{n} numbers" if n >= 0 else "numbers"
            raise RecipeError(f"{call}: targets must be {what}, one per {per}") from None
        if not (tg.flags.writeable and tg.flags.aligned):
            tg = tg.copy()                         # (the compiled call's one array type)
        if tg.ndim != 1 or (n >= 0 and tg.shape != (n,)):
            what = f"{n} numbers" if n >= 0 else "numbers"
            raise RecipeError(f"{call}: targets must be {what}, one per {per}, got shape {tg.shape}")
        return tg

    def _gait_rows(self, humans: Sequence[Any], slots: list[int], sl: np.ndarray | None, okv: np.ndarray,
                   tg: np.ndarray, moved: np.ndarray, n: int, call: str) -> None:
        """The gait targets' rows in order: the compiled call (anim.engine.cmdkernel
        .gait_targets) over the rows ``okv`` marks, each other one (or a target that is not
        finite) through ``Player.running`` and the gait's ``set_target``; what that raises
        gets ``row`` and a note naming the row. ``sl``: ``slots`` as an int64 array when
        the caller has it."""
        rules = self.rules
        h = rules.batch.humans
        buf = rules.commands
        if buf.n and not buf.due.isdisjoint(slots):
            buf.apply()                            # their stacks read as the waiting commands leave them
        ts = rules.stores.tasks
        if sl is None or not (sl.flags.c_contiguous and sl.flags.writeable and sl.flags.aligned):
            sl = np.fromiter(slots, np.int64, n)   # (the compiled call's one array type)
        mv = moved.view(np.int8)
        i = 0
        while i < n:
            rel = self._released_of(ts)
            args = (self._buf_tables(h, ts, rel), sl, okv, tg, mv, i, n)
            j = self._compiled("_targets_fn", CK.gait_targets, args)
            if j == n:
                break
            try:                                   # a human not checked, or a target not finite: as its handle
                g = self.host.running(humans[j], _GAIT)
                if g is not None:
                    g.set_target(float(tg[j]))
                    mv[j] = 1
            except Exception as exc:
                exc.row = j                        # type: ignore[attr-defined]
                exc.add_note(f"{call}: row {j} (of the batch) was refused; the rows before it were done")
                raise
            i = j + 1

    @staticmethod
    def _args(args: Any, n: int) -> np.ndarray:
        """``args`` as a C-ordered float64 array of ``n`` rows (RecipeError naming the field)."""
        if args is None:
            return _EMPTY if n == 0 else np.zeros((n, 0), np.float64)
        if args.__class__ is list and len(args) == n:   # rows of numbers: read in one pass (not numpy's discovery)
            w = len(args[0]) if args[0].__class__ in _ROWS else -1
            if w >= 0 and list(map(len, args)).count(w) == n and list(map(type, args)).count(args[0].__class__) == n:
                try:
                    return np.fromiter(chain.from_iterable(args), np.float64, n * w).reshape(n, w)
                except (TypeError, ValueError):
                    raise RecipeError("commands: args must be rows of numbers (a 2-D array, one row per command)") \
                        from None
        try:
            a = np.ascontiguousarray(args, dtype=np.float64)
        except (TypeError, ValueError):
            raise RecipeError("commands: args must be rows of numbers (a 2-D array, one row per command)") from None
        if a.ndim != 2 or a.shape[0] != n:
            raise RecipeError(f"commands: args must be a 2-D array of {n} rows, got shape {a.shape}")
        if not (a.flags.writeable and a.flags.aligned):
            a = a.copy()                           # (the compiled call's one array type)
        return a

    def _rows(self, commands: Sequence[Command], humans: Sequence[Any], entries: dict, width: int) \
            -> tuple[list[int], list[int], bool]:
        """Each row's human slot and plan (-1: through ``run``: a human this engine does not
        hold as it was, or whose row went back), and whether a (command, set) got its plan
        row now (then the plans are made again). RecipeError: a row's command not a Command,
        taking more params than ``width``, or an Arg end callback. The columns are read by
        maps (no Python line a row) when every human is this engine's, as it was, and of one
        anim set; else row by row (``_rows_one_by_one``)."""
        eng = self.rules.batch
        h = eng.humans
        n = len(humans)
        slots = list(map(_slot, humans))
        recs = list(map(_record, humans))
        sets = list(map(_anim_set, humans))
        s0 = sets[0]
        if not (sets.count(s0) == n and list(map(_engine, humans)).count(eng) == n
                and list(map(_table, recs)).count(h) == n and list(map(_row, recs)) == slots
                and list(map(h.gen.__getitem__, slots)) == list(map(_gen, recs))):
            return self._rows_one_by_one(commands, humans, entries, width)
        ents, new = self._entries_one_set(commands, s0, entries, width)
        return slots, ents, new

    def _entries_one_set(self, commands: Sequence[Command], s0: Any, entries: dict, width: int) -> tuple[list, bool]:
        """The entry of each command for humans all of anim set ``s0``, each command's looked
        up once (made where new), and whether any was made. Rejected (RecipeError naming the
        command's index): a command taking more numbers than ``width``."""
        known = self._by_set.get(id(s0))
        if known is not None and width >= known[1]:  # every command of the set known, none too wide
            try:
                return list(map(known[0].__getitem__, commands)), False
            except (KeyError, TypeError):
                pass
        new = False
        by_cmd: dict = {}
        for cmd in dict.fromkeys(commands):
            ent = entries.get((id(cmd), id(s0)))
            if ent is None:
                ent = self._new_entry(commands.index(cmd), cmd, s0)
                new = True
            if ent.n_params > width:
                i = commands.index(cmd)
                raise RecipeError(f"commands: args[{i}] has {width} numbers, {cmd.recipe!r} takes {ent.n_params}")
            by_cmd[cmd] = ent.e
        return list(map(by_cmd.__getitem__, commands)), new

    def _rows_one_by_one(self, commands: Sequence[Command], humans: Sequence[Any], entries: dict, width: int) \
            -> tuple[list[int], list[int], bool]:
        """``_rows``, a row at a time (humans of several sets, or one not as it was)."""
        eng = self.rules.batch
        h = eng.humans
        gen = h.gen
        slots: list[int] = []
        ents: list[int] = []
        get = entries.get
        new = False
        for i, (cmd, inst) in enumerate(zip(commands, humans)):
            ent = get((id(cmd), id(inst.anim_set)))
            if ent is None:
                ent = self._new_entry(i, cmd, inst.anim_set)
                new = True
            if ent.n_params > width:
                raise RecipeError(f"commands: args[{i}] has {width} numbers, {cmd.recipe!r} takes {ent.n_params}")
            s = inst.slot
            rec = inst.record
            if inst.engine is eng and rec.row == s and rec.table is h and s.__class__ is int and 0 <= s < len(gen) \
                    and gen[s] == rec.gen:
                slots.append(s)
                ents.append(ent.e)
            else:
                slots.append(0)
                ents.append(-1)
        return slots, ents, new

    def _new_entry(self, i: int, cmd: Any, anim_set: Any) -> "_Entry":
        """A plan row for ``cmd`` on ``anim_set`` (made by the next ``_refresh``), after the
        checks of a batch's command (RecipeError naming row ``i``)."""
        if cmd.__class__ is not Command:
            raise RecipeError(f"commands[{i}]: a Command (Player.prepare), got {type(cmd).__name__}")
        if cmd.ends is not None and any(e.__class__ is Arg for e in cmd.ends):
            raise RecipeError(f"commands[{i}]: an end callback given as an Arg cannot come from a row of numbers")
        ent = self._entries[(id(cmd), id(anim_set))] = _Entry(len(self._entries), cmd, anim_set)
        known = self._by_set.setdefault(id(anim_set), [{}, 0])
        known[0][cmd] = ent.e
        known[1] = max(known[1], ent.n_params)
        return ent

    def _refresh(self) -> None:
        """Every plan row made again from the commands' templates as they are now (learnt
        for the set under these options: RecipeRules' ``_templates`` and ``plan``)."""
        rules = self.rules
        n = len(self._entries)
        pi = np.zeros((max(8, n), CK.PI_WIDTH), np.int64)
        pf = np.zeros((max(8, n), CK.PF_WIDTH), np.float64)
        lut: list[tuple[int, int]] = []
        for ent in self._entries.values():
            row = pi[ent.e]
            row[CK.PI_PLACE] = -1
            cmd = ent.command
            tp = rules._templates(cmd, ent.anim_set)
            if tp is None or tp.plan is None or tp.sel4 is None or cmd.ends is not None:
                continue                           # not direct (yet): Player.run
            code, room, n_tasks, n_cursors, n_fades, n_gaits, window, fade = tp.plan
            row[CK.PI_ROOM], row[CK.PI_TASKS], row[CK.PI_CURSORS] = room, n_tasks, n_cursors
            row[CK.PI_FADES], row[CK.PI_GAITS], row[CK.PI_WINDOW] = n_fades, n_gaits, window
            row[CK.PI_STEPS] = len(tp.base)
            row[CK.PI_FADE_ARG] = fade.pos if fade.__class__ is Arg else -1
            pf[ent.e, CK.PF_FADE] = 0.0 if fade.__class__ is Arg else fade
            row[CK.PI_TARGET_ARG] = row[CK.PI_VALUE_ARG] = -1
            for k in range(CK.B_MAX_STEPS):
                row[CK.PI_SEL + k] = tp.base[k] if k < len(tp.base) else 0
                row[CK.PI_ARG + k] = -1
            for k, op, anim, extra in cmd.arg_steps:
                if op in _BLENDS and op != _GAIT:   # a mix's weight, a pick's value, a direction
                    if extra[0].__class__ is Arg:
                        row[CK.PI_TARGET_ARG] = extra[0].pos
                    else:
                        pf[ent.e, CK.PF_TARGET] = float(extra[0])
                elif op == _GAIT:
                    target, value = extra
                    if target.__class__ is Arg:
                        row[CK.PI_TARGET_ARG] = target.pos
                    else:
                        pf[ent.e, CK.PF_TARGET] = float(target)
                    if value is None:
                        row[CK.PI_VNONE] = 1
                    elif value.__class__ is Arg:
                        row[CK.PI_VALUE_ARG] = value.pos
                    else:
                        pf[ent.e, CK.PF_VALUE] = float(value)
                else:
                    pairs = sorted((int(aid), r) for (kk, aid), r in tp.by_id.items() if kk == k)
                    row[CK.PI_ARG + k] = anim.pos
                    row[CK.PI_LUT + k] = len(lut)
                    row[CK.PI_LUTN + k] = len(pairs)
                    lut.extend(pairs)
            row[CK.PI_STEER] = cmd.steer is not None   # (its target: the gait step's, PI_TARGET_ARG / PF_TARGET)
            row[CK.PI_PLACE] = code
        self._pi, self._pf = pi, pf
        self._lut = np.array(lut if lut else [(0, 0)], np.int64).reshape(-1, 2)
        self._learnt = rules.learnt
        self._options = rules.options

    def _run(self, commands: Sequence[Command], humans: Sequence[Any], a: np.ndarray, slots: list[int],
             ents: list[int], sl: np.ndarray | None = None) -> None:
        """The rows in order: as many as the compiled checks take at a time made buffer rows,
        each other one through ``Player.run`` (the module docstring). ``sl``: ``slots`` as
        an int64 array when the caller has it."""
        rules = self.rules
        buf = rules.commands
        n = len(slots)
        if sl is None or not (sl.flags.c_contiguous and sl.flags.writeable and sl.flags.aligned):
            sl = np.fromiter(slots, np.int64, n)   # (the compiled call's one array type)
        en = np.fromiter(ents, np.int64, n)
        cnt = self._cnt
        i = 0
        while i < n:
            kv = rules._cmd_views
            pool = rules.pool
            if kv is None or kv[0] != rules.stores.signal.now or kv[2] is not rules.batch.humans or kv[3] is not pool._out:
                kv = rules._views()
            if kv is None:                         # not plain blocks: every row through run
                en[i:] = -1
                j = i
            else:
                j = self._check(kv, buf, a, sl, en, i, n)
                if j > i:
                    got = j - i
                    # the humans that got a row, as the call marked them (a steered gait takes
                    # its target and makes none: its human, named, would wait for a write that
                    # never comes)
                    part = sl[i:j]
                    buf.due.update(part[self._mark[part] == cnt[CK.CN_STAMP]].tolist())
                    buf.n, buf.tasks, buf.cursors, buf.fades, buf.gaits = cnt[:CK.CN_STAMP].tolist()
                    rules.cmd_kernel_runs += got
                    self.rows_buffered += got
                if j == n:
                    return
                stop = cnt[CK.CN_STOP]
                if stop == CK.STOP_DUE or stop == CK.STOP_FULL:
                    buf.apply()                    # the waiting rows first, then this row's checks again
                    i = j
                    continue
            self._one(commands[j], humans[j], a[j], j)
            i = j + 1
            if rules.learnt != self._learnt or rules.options is not self._options:
                self._refresh()                    # the run learnt the command's rows: direct from now on

    def _check(self, kv: tuple, buf: Any, a: np.ndarray, sl: np.ndarray, en: np.ndarray, lo: int, hi: int) -> int:
        """One compiled call over rows ``lo``..``hi`` (anim.engine.cmdkernel.buffer_commands):
        the first row it did not buffer."""
        rules = self.rules
        h = rules.batch.humans
        pool = rules.pool
        ts = kv[4]
        if len(self._mark) < h.capacity:
            self._mark = np.zeros(h.capacity, np.int64)
            self._cnt[CK.CN_STAMP] = 0
        cnt = self._cnt
        cnt[CK.CN_STAMP] += 1                      # the humans with a row waiting: this call's mark
        stamp = cnt[CK.CN_STAMP]
        mark = self._mark
        for s in buf.due:
            mark[s] = stamp
        cnt[:CK.CN_STAMP] = (buf.n, buf.tasks, buf.cursors, buf.fades, buf.gaits)
        out = kv[3]
        fixed = self._fixed
        if fixed[0] is not kv or fixed[2] is not buf:   # the tables' arrays, kept while their views are (kv)
            fixed = self._fixed = (kv, (self._buf_tables(h, ts, self._released_of(ts)), CmdBuffer(buf.bi, buf.bf, cnt)),
                                   buf)
        args = fixed[1] + (CmdPlans(self._pi, self._pf, self._lut), CmdBatch(mark, sl, en, a), len(out),
                           ts.capacity > len(out), pool.capacity - pool._n_out, lo, hi)
        return self._compiled("_entry_fn", CK.buffer_commands, args)

    def _buf_tables(self, h: Any, ts: Any, released: np.ndarray) -> BufTables:
        """The tables' columns buffer_commands and gait_targets read (``released``: the
        task table's released flags as int8, ``_released_of``)."""
        st = self.rules.stores
        gs = st.gaits
        return BufTables(h.depth, h.queued, h.speed, h.stack, ts.type, released, ts.flags, ts.aux, gs.target, ts.n_free,
                         ts.free_rows, st.cursors.n_free, st.fades.n_free, gs.n_free)

    def _released_of(self, ts: Any) -> np.ndarray:
        """The task table's released flags seen as int8 (the compiled calls' type), kept
        while the table holds the same array."""
        src, view = self._released
        if src is not ts.released:
            src = ts.released
            view = src.view(np.int8)
            self._released = (src, view)
        return view

    def _compiled(self, slot: str, kernel: Any, args: tuple) -> int:
        """``kernel(*args)`` through its entry point (kept in attribute ``slot`` once the
        dispatcher typed a first call: every later call passes arrays of the same types,
        the tables' columns and this part's own)."""
        call = getattr(self, slot)
        if call is None:
            j, kept = first_call(kernel, args, self.stores.humans.in_use)
            setattr(self, slot, kept)
        else:
            j = call(*args)
        return int(j)

    def _one(self, cmd: Command, inst: Any, row: np.ndarray, i: int) -> None:
        """Row ``i`` through ``Player.run`` (its numbers as params: an anim id's as an int
        when whole); what it raises gets ``row`` and a note naming the row."""
        ent = self._entries.get((id(cmd), id(inst.anim_set)))
        ids = ent.id_args if ent is not None else frozenset()
        params = []
        for p in range(cmd.n_params):
            v = float(row[p])
            params.append(int(v) if p in ids and v.is_integer() else v)
        self.rows_run += 1
        try:
            self.host.run(inst, cmd, *params)
        except Exception as exc:
            exc.row = i                            # type: ignore[attr-defined]
            exc.add_note(f"commands: row {i} (of the batch) was refused; the rows before it were run")
            raise

