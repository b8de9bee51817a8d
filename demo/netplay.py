"""``scuffle demo --host PORT`` / ``--join HOST:PORT``: the demo's fight between two
processes over the network, with rollback (scuffle.net).

The host plays p1, the one who joins p2. Each window plays its fighter from its own
keyboard, or with ``--attract`` from its own FighterAI; headless, the AI always. Both
build the demo's Game the way ``scuffle run`` builds a scenario (``build_demo_game``), so
the confirmed inputs, written as a scenario (``--record``), replay to the same state.
``--sim-loss P --sim-delay N`` put a simulated network in front of each peer's sending
side (P of the datagrams lost, N updates late, up to one update of jitter).
With ``--seconds T`` both stop once update T x 30 is confirmed on both; the summary
(``OUT/summary.json``) then holds "netplay": desyncs, rollbacks, max_depth,
confirmed_update and confirmed_checksum (the state digest after that update, as
``scuffle run --checksum`` of the recording prints it).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from scuffle.game.fighters import registry as fighters_registry
from scuffle.game.fighters.ai import FighterAI
from scuffle.game.fighters.fightinput import FightInput
from scuffle.game.fighters.moves import Move
from scuffle.game.net import NetError, Session, SimLink, UdpLink, parse_address
from scuffle.game.runtime.files import OutputFile
from scuffle.game.runtime.scenario import Command, apply_command, parse_scenario, setup_scenario

__all__ = ["build_demo_game", "demo_scenario_text", "run_netplay", "PLAYERS", "HOST_PLAYER", "JOIN_PLAYER"]

PLAYERS = ("p1", "p2")
HOST_PLAYER, JOIN_PLAYER = PLAYERS
UPDATES_PER_SECOND = 30
START_DISTANCE = 3.0
KO_UPDATES = 120
AI_SETTINGS = {"aggression": 0.6, "think_every": 3}
P1_SEED_OFFSET = 1000
STATUS_EVERY = 5.0           # s of wall time between two status lines of a headless peer


def _toml(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "[" + ", ".join(_toml(x) for x in v) + "]"


def demo_scenario_text(health: float = 100.0, updates: int = 1, commands=()) -> str:
    """The demo's fight as a scenario (docs/scenarios.md): the fight options, the demo
    set, p1 and p2 3 m apart, the fight idle at update 0, then ``commands``: (update,
    human, action, keys) in the order they are applied."""
    half = START_DISTANCE / 2
    out = [f"updates = {int(updates)}", "", "[fight]", "separate = true", "rounds = true",
           f"round_pause = {KO_UPDATES}", "", "[sets.demo]", 'library = "demo"']
    for name, y, heading in (("p1", -half, 0.0), ("p2", half, 180.0)):
        out += ["", "[[humans]]", f"name = {_toml(name)}", 'set = "demo"', f"position = {_toml([0.0, y, 0.0])}",
                f"heading = {_toml(heading)}", f"health = {_toml(float(health))}"]
    for name in PLAYERS:
        out += ["", "[[commands]]", "update = 0", f"human = {_toml(name)}", f"loop = {int(Move.FIGHT_IDLE)}"]
    for update, human, action, keys in commands:
        out += ["", "[[commands]]", f"update = {int(update)}", f"human = {_toml(human)}", f"action = {_toml(action)}"]
        out += [f"{k} = {_toml(v)}" for k, v in keys.items()]
    return "\n".join(out) + "\n"


def _start_idle(game):
    """The action that starts both fighters on the fight idle at update 0 (as the
    recorded scenario's first commands do, through the scenario runner's apply_command)."""
    cmds = [Command(update=0, human=n, kind="loop", ids=[int(Move.FIGHT_IDLE)], index=i) for i, n in enumerate(PLAYERS)]

    def start(ctx) -> None:
        if ctx.update == 0:
            for cmd in cmds:
                apply_command(game, cmd)
    return start


def build_demo_game(health: float = 100.0):
    """The demo's Game for netplay: set up exactly as ``scuffle run`` sets up the
    recording (``setup_scenario``), its first action starting the fight idle at update 0
    (no other state: the inputs come from the session)."""
    sc = parse_scenario(demo_scenario_text(health), "<netplay demo>", registry=fighters_registry())
    game = setup_scenario(sc)
    game.ctx.actions[0] = _start_idle(game)            # in place of the scenario's Script
    return game


def _record_text(session, health: float) -> str:
    cmds = []
    for k, row in enumerate(session.confirmed_inputs(session.stop_at)):
        u = session.base + k
        for name, inp in zip(session.players, row):
            for action, keys in inp.commands():
                cmds.append((u, name, action, keys))
    head = "# Recorded by scuffle demo (netplay: the confirmed inputs of both peers).\n" \
           "# Replay: scuffle run THIS.toml --checksum (the session's confirmed checksum).\n"
    return head + demo_scenario_text(health, max(1, session.confirmed_update), cmds)


def _links(host: str | None, join: str | None, sim_loss: float, sim_delay: int, seed: int, rate: float):
    if host is not None:
        addr = parse_address(host, default_host="0.0.0.0")
        udp = UdpLink(addr)
        me = HOST_PLAYER
    else:
        peer = parse_address(join or "")
        bind_host = "127.0.0.1" if peer[0] in ("127.0.0.1", "localhost") else "0.0.0.0"
        udp = UdpLink((bind_host, 0), peer=peer)
        me = JOIN_PLAYER
    link = udp
    if sim_loss or sim_delay:
        link = SimLink(udp, delay=sim_delay / rate, jitter=1.0 / rate if sim_delay else 0.0, loss=sim_loss,
                       seed=seed * 2 + (me == JOIN_PLAYER))
    return link, me


def _net_summary(session) -> dict:
    st = session.stats
    return {"desyncs": st.desyncs, "rollbacks": st.rollbacks, "max_depth": st.max_depth,
            "confirmed_update": session.confirmed_update, "confirmed_checksum": session.confirmed_checksum,
            **{k: v for k, v in st.summary().items() if k not in ("desyncs", "rollbacks", "max_depth")}}


def hud_line(session) -> str:
    """The window's netplay line: round-trip time, rollbacks, frames ahead."""
    st = session.stats
    return (f"net  rtt {st.rtt_ms:5.0f} ms   rollbacks {st.rollbacks} (max {st.max_depth})   "
            f"ahead {session.frames_ahead:+.1f}   stalls {st.stalls}   desyncs {st.desyncs}")


def run_netplay(*, host: str | None = None, join: str | None = None, seconds: float | None = None,
                attract: bool = True, seed: int = 1, sim_loss: float = 0.0, sim_delay: int = 0,
                record=None, out=None, health: float = 100.0, rate: float = 30.0, timeout: float = 5.0,
                input_delay: int = 2, max_rollback: int = 8, window=None, log=print,
                handshake: float = 60.0) -> dict:
    """One peer of the demo's netplay (see the module docstring): ``host`` "[ADDR:]PORT"
    to wait on (p1), or ``join`` "HOST:PORT" (p2). ``window``: a callable(session,
    keyboard) run every frame that draws and returns False to quit (the pygame window),
    None: headless. ``rate`` updates per second of wall time; ``handshake`` s to wait for
    the peer (after the warm-up). Returns the summary
    (written to ``out``/summary.json when ``out`` is given). Raised: NetError (the peer
    timed out, left, or differs), LinkError (an address)."""
    link, me = _links(host, join, sim_loss, sim_delay, seed, rate)
    other = JOIN_PLAYER if me == HOST_PLAYER else HOST_PLAYER
    session = Session(lambda: build_demo_game(health), PLAYERS, me, link, input_delay=input_delay,
                      max_rollback=max_rollback, frame_seconds=1.0 / rate, timeout=timeout)
    ai = FighterAI(me, other, seed=seed + (P1_SEED_OFFSET if me == HOST_PLAYER else 0), **AI_SETTINGS)
    keyboard = None
    if window is not None and not attract:
        from scuffle.demo.app import KeyboardControl
        keyboard = KeyboardControl(me, other)
    if seconds is not None:
        session.finish_at(int(round(seconds * UPDATES_PER_SECOND)))
    t0 = time.perf_counter()
    try:
        log(f"demo: netplay as {me} ({'waiting on' if host is not None else 'joining'} "
            f"{host if host is not None else join}); warming up and shaking hands")
        session.start(wait=handshake)
        log(f"demo: netplay: connected, playing {me}")
        tick = 1.0 / rate
        next_t = time.perf_counter()
        status_at = next_t + STATUS_EVERY
        while not session.finished:
            session.poll()
            if session.can_advance():
                fight = session.game.fight
                inp = keyboard.decide(fight) if keyboard is not None else ai.decide(session.game)
                session.add_local_input(me, inp if isinstance(inp, FightInput) else FightInput.EMPTY)
            session.advance()
            if window is not None and window(session, keyboard) is False:
                break
            if window is None and time.perf_counter() >= status_at:      # headless: the HUD's line now and then
                status_at += STATUS_EVERY
                log(f"demo: update {session.frame}: {hud_line(session)}")
            next_t += tick
            pause = next_t - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            elif pause < -0.25:
                next_t = time.perf_counter()          # far behind (a stall): no burst to catch up
        summary = _summary(session, me, seed, t0)
        if record is not None:                        # the confirmed updates (all of them once finished)
            with OutputFile(record, "record") as fp:
                fp.write(_record_text(session, health))
            summary["record"] = str(record)
        session.close()
    except BaseException:
        session.close(linger=0.0)
        raise
    finally:
        session.game.close()
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        with OutputFile(os.path.join(out, "summary.json"), "summary") as fp:
            fp.write(json.dumps(summary, indent=2) + "\n")
    return summary


def _summary(session, me: str, seed: int, t0: float) -> dict:
    stats = session.game.fight.stats
    return {"updates": session.game.update, "seconds": session.game.update / UPDATES_PER_SECOND, "seed": seed,
            "player": me, "grabs": stats.grabs, "strikes": stats.strikes, "throws": stats.throws,
            "damage": stats.damage, "wall_seconds": round(time.perf_counter() - t0, 3),
            "netplay": _net_summary(session)}


class _View:
    """What demo.render reads of a simulation (as of DemoSim), for a netplay Game."""

    def __init__(self, session, me: str, attract: bool, seed: int):
        self.session, self.me, self.attract, self.seed = session, me, attract, seed
        self.game, self.fight = session.game, session.game.fight
        self.recent_events = {n: [] for n in PLAYERS}

    def controller_of(self, name: str) -> str:
        if name != self.me:
            return "the peer"
        return "AI (here)" if self.attract else "keyboard (here)"


def make_window(size=(1280, 720), attract: bool = False):
    """The netplay window: a callable(session, keyboard) the loop runs every update, which
    reads the keys into ``keyboard`` (None: the AI plays), draws the arena, the HUD and the
    netplay line (``hud_line``), and returns False once the window is closed or Escape
    pressed."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import pygame

    from scuffle.demo import render
    from scuffle.demo.app import App

    state: dict = {}
    actions = App._ACTIONS

    def frame(session, keyboard) -> bool:
        if not state:
            pygame.display.init()
            pygame.font.init()
            me = next(p for i, p in enumerate(session.players) if session.local_mask >> i & 1)
            state.update(screen=pygame.display.set_mode(size, pygame.RESIZABLE), fonts=render.Fonts(),
                         view=_View(session, me, keyboard is None, 0), camera=None, held=set())
            pygame.display.set_caption(f"scuffle netplay: {me} (H for help)")
        held = state["held"]
        for event in pygame.event.get():
            if event.type == pygame.QUIT or (event.type == pygame.KEYDOWN and event.key == pygame.K_ESCAPE):
                pygame.display.quit()
                return False
            if event.type == pygame.VIDEORESIZE:
                state["screen"] = pygame.display.set_mode(event.size, pygame.RESIZABLE)
            elif event.type == pygame.KEYDOWN:
                held.add(event.key)
                if keyboard is not None and event.key in actions:
                    keyboard.press(actions[event.key], session.frame)
            elif event.type == pygame.KEYUP:
                held.discard(event.key)
        if keyboard is not None:
            keys = pygame.key.get_pressed()

            def down(*codes) -> bool:
                return any(c in held or keys[c] for c in codes)
            keyboard.direction = (float(down(pygame.K_RIGHT, pygame.K_d) - down(pygame.K_LEFT, pygame.K_a)),
                                  float(down(pygame.K_UP, pygame.K_w) - down(pygame.K_DOWN, pygame.K_s)))
            keyboard.jog = down(pygame.K_LSHIFT, pygame.K_RSHIFT)
        view, screen = state["view"], state["screen"]
        scene = render.snapshot(view)
        scene.mode = render.mode_of(view)
        w, h = screen.get_size()
        state["camera"] = render.fit_camera(scene, pygame.Rect(0, 0, int(w * render.ARENA_FRACTION), h),
                                            state["camera"], ease=0.08)
        render.draw_scene(screen, scene, state["fonts"], state["camera"])
        line = state["fonts"].mono.render(hud_line(session), True, (235, 235, 235))
        screen.blit(line, (8, h - line.get_height() - 6))
        pygame.display.flip()
        return True

    def post_key(key: str, down: bool = True) -> None:
        """Put a key event on pygame's queue as the keyboard would (scripts and tests)."""
        kind = pygame.KEYDOWN if down else pygame.KEYUP
        pygame.event.post(pygame.event.Event(kind, key=App.key_code(key), mod=0))

    def post_quit() -> None:
        """Put the window's close on pygame's queue."""
        pygame.event.post(pygame.event.Event(pygame.QUIT))

    frame.post_key = post_key          # type: ignore[attr-defined]
    frame.post_quit = post_quit        # type: ignore[attr-defined]
    return frame


__all__ += ["hud_line", "make_window", "NetError"]
