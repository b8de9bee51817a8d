"""Last update's outputs (each human's events and released ids) are forgotten by a stamp,
not cleared human by human: a step over every human of the engine moves the engine's
stamp on and every output stamped before it reads as empty; a step over some humans only
clears theirs and keeps the others'; a human leaving keeps what it had; a restore forgets
them all. What a reader sees is what it saw when each stepped human's were cleared."""
from __future__ import annotations

from scuffle.game.tools.bench import build_crowd


def _outputs(game) -> dict:
    """name -> (the events' (type, anim id, frame), the released ids), as read now."""
    out = {}
    for name, _ in game.humans():
        inst = game.instance(name)
        out[name] = ([(int(fe.event.type), fe.anim_id, fe.event.frame) for fe in inst.events], list(inst.released))
    return out


def test_a_step_over_everyone_forgets_the_last_outputs_without_clearing_each():
    game = build_crowd(60, "realistic", "compiled", 2)
    eng = game.player.batch
    try:
        cleared = []
        real = type(eng)._cleared
        type(eng)._cleared = lambda self, *a, **k: cleared.append(1) or real(self, *a, **k)
        had = quiet = 0
        for u in range(50):
            stamp = eng.stamp
            game.step()
            fired = set(eng.fired_places(game.ctx.crowd.instances))
            seen = _outputs(game) if u % 2 else {}          # every other update read; the rest left as rows
            for k, (name, _) in enumerate(game.humans()):
                if not seen:
                    break
                events, released = seen[name]
                assert bool(events) == (k in fired), (u, name)  # this update's events only
                had += bool(events or released)
                quiet += not (events or released)
            assert eng.stamp >= stamp                         # moved on by the step (or not, when nothing to forget)
        assert had > 20 and quiet > 20
        assert not cleared                                    # no human cleared one by one
    finally:
        type(eng)._cleared = real
        game.close()


def test_a_step_over_some_humans_keeps_the_others_outputs():
    game = build_crowd(24, "realistic", "compiled", 1)
    try:
        player, insts = game.player, [game.instance(n) for n, _ in game.humans()]
        for _ in range(40):                                   # until a human not stepped next has events
            game.step()
            fired = [i for i in insts if i.events]
            if fired:
                break
        keep = fired[0]
        kept = list(keep.events)
        others = [i for i in insts if i is not keep]
        player.step(others)                                   # a step over the others only
        assert keep.events == kept                            # its outputs kept, made before the buffer's reuse
        player.step(insts)                                    # stepped: its last outputs forgotten
        fired = player.batch.fired_places(insts)
        assert bool(keep.events) == (insts.index(keep) in fired)
        assert all(bool(i.events) == (k in fired) for k, i in enumerate(insts))
    finally:
        game.close()


def test_a_leaver_keeps_its_last_outputs_and_a_restore_forgets_them():
    game = build_crowd(24, "realistic", "compiled", 3)
    try:
        name = None
        for _ in range(60):
            game.step()
            name = next((n for n, _ in game.humans() if n not in ("h0", "h1") and game.instance(n).events), None)
            if name:
                break
        assert name is not None
        inst = game.instance(name)
        had = list(inst.events)
        game.remove_human(name)
        game.step()
        assert inst.engine is None and inst.events == had   # made as it left, kept
        snap = game.snapshot()                              # (without the outputs)
        with_outputs = game.snapshot(outputs=True)
        saved = _outputs(game)
        for _ in range(5):
            game.step()
        assert any(ev or rel for ev, rel in _outputs(game).values())
        game.restore(snap)
        assert all(not ev and not rel for ev, rel in _outputs(game).values())
        game.step()
        game.restore(with_outputs)                          # the saved outputs put back, current
        assert _outputs(game) == saved
        game.step()                                         # and forgotten at the next step
        fired = game.player.batch.fired_places(game.ctx.crowd.instances)
        assert all(bool(ev) == (k in fired) for k, (ev, _) in enumerate(_outputs(game).values()))
    finally:
        game.close()
