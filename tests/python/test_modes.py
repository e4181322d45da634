"""Python dispatch modes (Note [Python kernels and modes]): what they see, nesting with each
other and with C++ modes, the mode being off its stack while its handler runs, errors, and one
Python object per tensor; the seed's two examples."""

import os
import subprocess
import sys
import weakref

import pytest

import dispatchkit as dk

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Recorder(dk.DispatchMode):
    def __init__(self, tag, log):
        self.tag, self.log = tag, log

    def __dk_dispatch__(self, func, types, args=(), kwargs=None):
        self.log.append((self.tag, func.name()))
        return func(*args, **(kwargs or {}))


def test_mode_sees_operators_with_func_args_and_kwargs():
    seen = []

    class M(dk.DispatchMode):
        def __dk_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append((func, types, args, kwargs))
            return func(*args, **kwargs)

    x = dk.tensor([1.0, 2.0])
    with M():
        y = dk.add(x, x, alpha=3)
    func, types, args, kwargs = seen[0]
    assert func is dk.ops.dk.add.Tensor and types == (dk.Tensor,)
    assert args[0] is x and args[1] is x and kwargs == {"alpha": 3}
    assert y.tolist() == [4, 8]


def test_mode_result_is_the_callers_object():
    kept = []

    class Tagger(dk.DispatchMode):
        def __dk_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **kwargs)
            out.tag = func.name()
            kept.append(weakref.ref(out))
            return out

    x = dk.ones(2)
    with Tagger():
        y = dk.neg(x)
    assert y.tag == "dk::neg" and kept[0]() is y


def test_nested_python_modes_run_outer_last():
    log = []
    x = dk.ones(1)
    with Recorder("outer", log), Recorder("inner", log):
        dk.neg(x)
    assert log == [("inner", "dk::neg"), ("outer", "dk::neg")]


def test_python_and_cpp_modes_nest_both_ways():
    log = []
    x = dk.ones(1)
    with dk.modes.OpCounter() as counter, Recorder("py", log):
        dk.neg(x)
    assert log == [("py", "dk::neg")] and counter.count("dk::neg") == 1
    log.clear()
    with Recorder("py", log), dk.modes.OpCounter() as counter:
        dk.neg(x)
    assert log == [("py", "dk::neg")] and counter.count("dk::neg") == 1


def test_mode_is_popped_while_its_handler_runs():
    log = []

    class Reentrant(dk.DispatchMode):
        def __dk_dispatch__(self, func, types, args=(), kwargs=None):
            log.append(func.name())
            dk.neg(dk.ones(1))  # not seen by this mode: it is off the stack now
            return func(*args, **(kwargs or {}))

    with Reentrant():
        dk.abs(dk.ones(1))
    assert log.count("dk::neg") == 0 and "dk::abs" in log


def test_exception_in_handler_propagates_and_the_stack_recovers():
    class Boom(dk.DispatchMode):
        def __dk_dispatch__(self, func, types, args=(), kwargs=None):
            raise KeyError("from the mode")

    x = dk.ones(1)
    with pytest.raises(KeyError) as info:
        with Boom():
            dk.neg(x)
    assert "Boom.__dk_dispatch__ for dk::neg" in info.value.__notes__[0]
    assert dk.neg(dk.ones(1)).tolist() == [-1]  # no mode left behind


def test_mode_can_replace_results():
    class Zero(dk.DispatchMode):
        def __dk_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            return dk.zeros_like(out) if func is dk.ops.dk.exp.default else out

    with Zero():
        assert dk.exp(dk.ones(2)).tolist() == [0, 0]


def test_leak_detector_example_names_the_leaking_operator():
    out = subprocess.run([sys.executable, os.path.join(REPO, "python", "examples", "leak_detector.py")],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert "1 tensor(s) made in the block are still alive:" in out
    assert "dk::mul.Tensor made dispatchkit.float32 [4, 5]" in out


def test_rank_logger_example_and_dk_ranklogs(tmp_path):
    for rank in (0, 1):
        env = dict(os.environ, RANK=str(rank), DIVERGE="1")
        subprocess.run([sys.executable, os.path.join(REPO, "python", "examples", "rank_logger.py"), str(tmp_path)],
                       env=env, check=True, timeout=120, capture_output=True)
    report = subprocess.run([sys.executable, os.path.join(REPO, "tools", "dk-ranklogs"), str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 1
    assert "ranks diverge at operator #38" in report.stdout
    assert "rank 1: dk::t(Double[8, 4])" in report.stdout
