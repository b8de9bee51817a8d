"""The kernels as jobs (anim.engine.jobs): named inputs, a validate() that rejects what the
compiled code cannot run on with one line naming the field, and passes that are the
kernel's named steps."""
from __future__ import annotations

import ast
import importlib
import inspect
import textwrap

import numpy as np
import pytest

from scuffle.anim.engine import jobs as J
from scuffle.anim.engine import kernels as K
from scuffle.anim.engine.plan import pose_tables
from scuffle.game.tools.bench import build_crowd


@pytest.fixture(scope="module")
def engine():
    """A small realistic crowd stepped a few times: its engine's own tables and buffers."""
    game = build_crowd(24, "realistic", "compiled", 1, 1)
    for _ in range(3):
        game.step()
    yield game
    game.close()


def _step_inputs(game) -> J.StepInputs:
    b = game.player.batch
    H, T, C, F, G, E = b._tables()
    out = b._step_out
    n = 5
    rows = np.arange(n, dtype=np.int64)
    return J.StepInputs(rows, 0, float(np.float32(1 / 30)), b._rules, H, T, C, F, G, E, out)


def _pose_inputs(game) -> J.PoseInputs:
    b = game.player.batch
    H, T, C, F, G, E = b._tables()
    out, refused, queued, cols, outs, buffers = b._pose_args
    n = 5
    return J.PoseInputs(np.arange(n, dtype=np.int64), cols[:n], H, T, C, F, G, E,
                        pose_tables(game.player.bank).tables, b._scratch, outs, buffers)


def _rejects(job, inputs, field: str) -> str:
    with pytest.raises(J.KernelInputError) as e:
        job.validate(inputs)
    msg = str(e.value)
    assert isinstance(e.value, ValueError) and "\n" not in msg
    assert msg.startswith(f"{job.KERNEL}: {field}:"), msg
    return msg


def test_the_engines_own_inputs_pass(engine):
    J.StepJob().validate(_step_inputs(engine))
    J.PoseJob().validate(_pose_inputs(engine))


def test_step_job_rejects_each_bad_input_naming_it(engine):
    job = J.StepJob()
    good = _step_inputs(engine)
    T = good.tasks
    _rejects(job, good._replace(tasks=T._replace(rate=T.rate.astype(np.float64))), "tasks.rate")
    _rejects(job, good._replace(tasks=T._replace(nxt=T.nxt[:-1])), "tasks.nxt")
    _rejects(job, good._replace(tasks=T._replace(c0=np.stack([T.c0, T.c0], axis=1)[:, 0])), "tasks.c0")
    _rejects(job, good._replace(tasks=tuple(T)), "tasks")
    cap = good.humans.depth.shape[0]
    assert "outside the human table" in _rejects(job, good._replace(rows=np.array([0, cap], np.int64)), "rows")
    _rejects(job, good._replace(rows=np.array([-1], np.int64)), "rows")
    _rejects(job, good._replace(rows=np.full(40, cap + 1, np.int64)), "rows")
    _rejects(job, good._replace(rows=good.rows.astype(np.int32)), "rows")
    _rejects(job, good._replace(start=6), "start")
    _rejects(job, good._replace(dt=float("nan")), "dt")
    _rejects(job, good._replace(dt=-0.1), "dt")
    _rejects(job, good._replace(out=good.out._replace(status=good.out.status[:2])), "out.status")
    _rejects(job, good._replace(out=good.out._replace(ev_out=good.out.ev_out[:, :3].copy())), "out.ev_out")
    _rejects(job, good._replace(out=good.out._replace(walk=good.out.walk[:8])), "out.walk")
    _rejects(job, good._replace(rules=tuple(good.rules)), "rules")
    _rejects(job, tuple(good), "inputs")
    job.validate(good)                      # and the good ones again, after every refusal


def test_pose_job_rejects_each_bad_input_naming_it(engine):
    job = J.PoseJob()
    good = _pose_inputs(engine)
    width = good.out.pos.shape[-1]
    _rejects(job, good._replace(cols=np.array([0, 1, 2, 3, width], np.int64)), "cols")
    _rejects(job, good._replace(cols=good.cols[:2]), "cols")
    _rejects(job, good._replace(bank=good.bank._replace(kval=good.bank.kval.astype(np.float64))), "bank.kval")
    _rejects(job, good._replace(scratch=good.scratch._replace(rot=good.scratch.rot[:4])), "scratch.rot")
    _rejects(job, good._replace(out=good.out._replace(rot=good.out.rot[:, :, :2])), "out.rot")
    _rejects(job, good._replace(buffers=good.buffers._replace(refused=good.buffers.refused[:1])), "buffers.refused")
    _rejects(job, good._replace(rows=np.array([0, 10 ** 9], np.int64)), "rows")
    job.validate(good)


def test_motion_job_rejects_a_pose_column_outside_the_poses():
    job = J.MotionJob()
    n, poses = 3, 2
    good = J.MotionInputs(np.array([0, 1, -1], np.int64), np.zeros((3, poses), np.float32),
                          np.zeros((36, poses), np.bool_), np.zeros((4, 34, poses), np.float32), np.zeros(n),
                          np.zeros(n, np.bool_), np.zeros((n, 3)), np.zeros((n, 3)), np.zeros(n), 1 / 30, 50.0,
                          np.zeros((n, 3)))
    job.validate(good)
    _rejects(job, good._replace(idx=np.array([0, 2, -1], np.int64)), "idx")
    _rejects(job, good._replace(heading=np.zeros(2)), "heading")
    _rejects(job, good._replace(cap=float("inf")), "cap")


def test_a_bad_input_never_reaches_the_kernel(engine):
    """run() validates first: the kernel is not called on inputs it cannot run on."""
    called = []
    job = J.StepJob()
    bad = _step_inputs(engine)._replace(rows=np.array([10 ** 9], np.int64))
    with pytest.raises(J.KernelInputError):
        job.run(bad, lambda *a: called.append(a))
    assert called == []


def test_the_engine_runs_its_kernels_as_jobs(engine, monkeypatch):
    """Every kernel call of an update goes through its job's validate."""
    seen = []
    real = J._Job.validate
    monkeypatch.setattr(J._Job, "validate", lambda self, inputs: (seen.append(self.KERNEL), real(self, inputs)))
    engine.step()
    assert {"step_stacks", "pose_stacks", "root_motion_step"} <= set(seen), seen


@pytest.mark.parametrize("cls", list(J.COLUMN_TYPES))
def test_the_column_types_name_every_field(cls):
    """COLUMN_TYPES lists every array field of each table tuple (a column added to
    anim.engine.kernel_types is checked too)."""
    hints = {f for f, t in cls.__annotations__.items() if "ndarray" in str(t)}
    assert set(J.COLUMN_TYPES[cls]) == hints


@pytest.mark.parametrize("job", [J.StepJob, J.PoseJob, J.FlushJob, J.AnimIdJob, J.MotionJob])
def test_a_jobs_passes_are_its_kernels_named_steps(job):
    """Each pass names steps of the kernel's module that the kernel (or a step it calls)
    calls; the inputs are the kernel's arguments, in order."""
    mod = importlib.import_module(f"scuffle.anim.engine.{K.MODULE_OF[job.KERNEL]}")
    kernel = getattr(mod, job.KERNEL)
    params = list(inspect.signature(kernel.py_func).parameters)
    assert list(job.Inputs._fields) == params
    src = inspect.getsource(mod)
    called = {n.func.id for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    body = {n.func.id for n in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(kernel.py_func))))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert job.PASSES
    for name, steps in job.PASSES:
        assert steps, name
        for s in steps:
            assert s in called, (name, s)
    assert body & {s for _, steps in job.PASSES for s in steps}


def _flush_inputs(game, entries: np.ndarray) -> J.FlushInputs:
    from scuffle.anim.engine.kernel_types import FlushBuffers, RowState
    b = game.player.batch
    st = game.player.stores
    H, T, C, F, G, E = b._tables()
    n_t, n_h = T.type.shape[0], H.depth.shape[0]

    def rows(t):
        return RowState(t.live, t.gen, t.free_rows, t.n_free, t.free_at)

    buf = FlushBuffers(entries, np.zeros(len(entries), np.int64), np.zeros(n_t, np.int32), np.zeros(9, np.int64),
                       np.zeros(64, np.int32), np.zeros(n_t, np.bool_), np.full(n_t, -1, np.int32),
                       np.full(n_h, -1, np.int64), np.zeros(16, np.int8), np.zeros(len(entries), np.int32))
    return J.FlushInputs(0, len(entries), False, H, T, rows(st.tasks), C, G, rows(st.gaits), rows(st.fades), buf)


@pytest.mark.parametrize("many", [False, True])
def test_flush_job_rejects_an_entry_outside_the_tables(engine, many):
    job = J.FlushJob()
    n = 40 if many else 3
    good = _flush_inputs(engine, np.zeros((n, 2), np.int64))
    job.validate(good)
    bad = good.buf.entries.copy()
    bad[-1, 1] = good.tasks.type.shape[0]
    _rejects(job, good._replace(buf=good.buf._replace(entries=bad)), "buf.entries")
    _rejects(job, good._replace(hi=n + 1), "lo, hi")
    _rejects(job, good._replace(task_rows=good.task_rows._replace(live=good.task_rows.live[:-1])), "task_rows.gen")
    _rejects(job, good._replace(buf=good.buf._replace(end_keep=np.zeros(16, np.int64))), "buf.end_keep")
    _rejects(job, good._replace(buf=good.buf._replace(notes=np.zeros(n, np.int64))), "buf.notes")
    _rejects(job, good._replace(buf=good.buf._replace(notes=np.zeros(n - 1, np.int32))), "buf.notes")


def test_a_run_whose_range_alone_changed_checks_that_range(engine):
    """Inputs that are the objects found good last time except the per-run ones (a
    flush's entry range, a refresh's rows) still have those checked, each time."""
    job = J.FlushJob()
    good = _flush_inputs(engine, np.zeros((4, 2), np.int64))
    job.validate(good)
    job.validate(good._replace(lo=0, hi=2))                     # the same buffers, another range: good
    good.buf.entries[2, 0] = good.humans.depth.shape[0]         # an entry the engine did not write
    _rejects(job, good._replace(lo=1, hi=3), "buf.entries")
    job.validate(good._replace(lo=0, hi=2))                     # a range without it: good
    _rejects(job, good._replace(lo=3, hi=2), "lo, hi")
    _rejects(job, good._replace(hi=5), "lo, hi")
    ids = J.AnimIdJob()
    b = engine.player.batch
    H, T, C, F, G, E = b._tables()
    seen = np.zeros(H.depth.shape[0], np.bool_)
    ok = J.AnimIdInputs(np.arange(3, dtype=np.int64), H, engine.player.stores.humans.anim, T, C, G, seen)
    ids.validate(ok)
    ids.validate(ok._replace(rows=np.arange(2, dtype=np.int64)))
    _rejects(ids, ok._replace(rows=np.array([0, H.depth.shape[0]], np.int64)), "rows")
    _rejects(ids, ok._replace(rows=np.array([0, 1], np.int32)), "rows")
