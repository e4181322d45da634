"""tools/dkrun: the ranks' environment, their output, exit statuses, failures, timeouts, signals.

The ranks are small Python programs (sys.executable -c ...). Run from the project root:
    python3 -m unittest discover -s tests/tools -t .
"""

import importlib.machinery
import importlib.util
import io
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DKRUN = os.path.join(ROOT, "tools", "dkrun")
PY = sys.executable


def load_dkrun():
    """tools/dkrun as a module (it has no .py suffix)."""
    loader = importlib.machinery.SourceFileLoader("dkrun", DKRUN)
    spec = importlib.util.spec_from_loader("dkrun", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def dkrun(*args, env=None, timeout=15):
    """Runs dkrun with args; returns (exit status, stdout, stderr, seconds taken)."""
    start = time.monotonic()
    result = subprocess.run([PY, DKRUN, *args], capture_output=True, text=True, env=env, timeout=timeout)
    return result.returncode, result.stdout, result.stderr, time.monotonic() - start


def rank_lines(output, rank):
    """The lines of output that rank printed, without the "[rank k] " prefix."""
    prefix = f"[rank {rank}] "
    return [line[len(prefix):] for line in output.splitlines() if line.startswith(prefix)]


def process_gone(pid, wait=3.0):
    """Whether process pid has ended (a zombie counts), waiting up to wait seconds for it."""
    deadline = time.monotonic() + wait
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if state in ("Z", "X"):
                return True
        except FileNotFoundError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


class EnvironmentTest(unittest.TestCase):
    def test_each_rank_gets_its_rank_and_the_job_and_dkruns_environment(self):
        program = ("import json, os; print(json.dumps({k: os.environ.get(k) for k in "
                   "['RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT', "
                   "'DKRUN_TEST_MARK']}))")
        env = dict(os.environ, DKRUN_TEST_MARK="inherited")
        status, out, err, _ = dkrun("-n", "3", PY, "-c", program, env=env)
        self.assertEqual(status, 0, err)
        seen = [json.loads(rank_lines(out, k)[0]) for k in range(3)]
        for k, got in enumerate(seen):
            self.assertEqual(got["RANK"], str(k))
            self.assertEqual(got["LOCAL_RANK"], str(k))
            self.assertEqual(got["WORLD_SIZE"], "3")
            self.assertEqual(got["LOCAL_WORLD_SIZE"], "3")
            self.assertEqual(got["MASTER_ADDR"], "127.0.0.1")
            self.assertEqual(got["DKRUN_TEST_MARK"], "inherited")
        ports = {got["MASTER_PORT"] for got in seen}
        self.assertEqual(len(ports), 1, "all ranks get the same MASTER_PORT")
        self.assertTrue(1 <= int(ports.pop()) <= 65535)

    def test_master_addr_and_port_given(self):
        program = "import os; print(os.environ['MASTER_ADDR'], os.environ['MASTER_PORT'])"
        status, out, err, _ = dkrun("-n", "2", "--master-addr", "localhost", "--master-port", "29500", PY, "-c", program)
        self.assertEqual(status, 0, err)
        self.assertEqual(rank_lines(out, 0), ["localhost 29500"])
        self.assertEqual(rank_lines(out, 1), ["localhost 29500"])

    def test_default_port_is_free_and_the_rank_can_listen_on_it(self):
        program = ("import os, socket; s = socket.socket(); "
                   "s.bind((os.environ['MASTER_ADDR'], int(os.environ['MASTER_PORT']))); s.listen(); print('bound')")
        status, out, err, _ = dkrun("-n", "1", PY, "-c", program)
        self.assertEqual(status, 0, err)
        self.assertEqual(rank_lines(out, 0), ["bound"])

    def test_free_ports_differ_and_are_valid(self):
        module = load_dkrun()
        ports = [module.find_free_port("127.0.0.1") for _ in range(5)]
        self.assertGreater(len(set(ports)), 1)
        for port in ports:
            self.assertTrue(1 <= port <= 65535)
        with socket.socket() as s:
            s.bind(("127.0.0.1", ports[-1]))  # still free once find_free_port has closed it

    def test_arguments_after_program_are_passed_unchanged(self):
        program = "import json, sys; print(json.dumps(sys.argv[1:]))"
        status, out, err, _ = dkrun("-n", "1", PY, "-c", program, "-n", "5", "--timeout", "x", "--", "a b")
        self.assertEqual(status, 0, err)
        self.assertEqual(rank_lines(out, 0), ['["-n", "5", "--timeout", "x", "--", "a b"]'])


class OutputTest(unittest.TestCase):
    def test_lines_are_prefixed_by_rank_and_stream_and_keep_their_order(self):
        program = ("import os, sys\n"
                   "r = os.environ['RANK']\n"
                   "for i in range(50):\n"
                   "    print(f'out {r} {i}', flush=True)\n"
                   "    print(f'err {r} {i}', file=sys.stderr, flush=True)\n"
                   "sys.stdout.write(f'partial {r}')\n")
        status, out, err, _ = dkrun("-n", "2", PY, "-c", program)
        self.assertEqual(status, 0, err)
        for r in range(2):
            self.assertEqual(rank_lines(out, r), [f"out {r} {i}" for i in range(50)] + [f"partial {r}"])
            self.assertEqual(rank_lines(err, r), [f"err {r} {i}" for i in range(50)])
        # Nothing unprefixed: every line of both streams is a rank's.
        for line in out.splitlines() + err.splitlines():
            self.assertRegex(line, r"^\[rank [01]\] ")

    def test_no_prefix_prints_output_unchanged(self):
        status, out, err, _ = dkrun("-n", "2", "--no-prefix", PY, "-c", "print('same line')")
        self.assertEqual(status, 0, err)
        self.assertEqual(out, "same line\nsame line\n")

    def test_help_from_the_executable(self):
        result = subprocess.run([DKRUN, "--help"], capture_output=True, text=True, timeout=10)
        self.assertEqual(result.returncode, 0)
        self.assertIn("usage: dkrun -n N", result.stdout)
        self.assertIn("LOCAL_WORLD_SIZE", result.stdout)


class ExitStatusTest(unittest.TestCase):
    def test_all_ranks_exit_zero(self):
        status, out, err, _ = dkrun("-n", "4", PY, "-c", "pass")
        self.assertEqual(status, 0)
        self.assertNotIn("dkrun:", err)

    def test_all_ranks_skip_gives_77(self):
        status, _, _, _ = dkrun("-n", "3", PY, "-c", "import sys; sys.exit(77)")
        self.assertEqual(status, 77)

    def test_some_ranks_skipping_is_a_failure_not_a_skip(self):
        program = "import os, sys; sys.exit(77 if os.environ['RANK'] == '0' else 0)"
        status, _, err, _ = dkrun("-n", "2", PY, "-c", program)
        self.assertEqual(status, 1)
        self.assertIn("only rank 0 exited with status 77", err)

    def test_failing_rank_status_and_sleeping_rank_stopped_after_grace(self):
        program = ("import os, sys, time\n"
                   "if os.environ['RANK'] == '1':\n"
                   "    time.sleep(0.2); sys.exit(3)\n"
                   "time.sleep(30)\n")
        status, _, err, seconds = dkrun("-n", "3", "--grace", "0.5", PY, "-c", program)
        self.assertEqual(status, 3)
        self.assertIn("dkrun: rank 1 exited with status 3", err)
        self.assertIn("dkrun: stopping ranks 0, 2 (still running after rank 1 failed)", err)
        self.assertLess(seconds, 4.5)

    def test_rank_that_finishes_within_grace_is_not_stopped(self):
        program = ("import os, sys, time\n"
                   "if os.environ['RANK'] == '1':\n"
                   "    sys.exit(3)\n"
                   "time.sleep(0.5); print('finished', flush=True)\n")
        status, out, err, _ = dkrun("-n", "2", "--grace", "4", PY, "-c", program)
        self.assertEqual(status, 3)
        self.assertEqual(rank_lines(out, 0), ["finished"])
        self.assertNotIn("stopping", err)

    def test_status_of_the_first_rank_to_fail_in_time(self):
        program = ("import os, sys, time\n"
                   "if os.environ['RANK'] == '0':\n"
                   "    time.sleep(0.8); sys.exit(5)\n"
                   "time.sleep(0.1); sys.exit(4)\n")
        status, _, err, _ = dkrun("-n", "2", "--grace", "4", PY, "-c", program)
        self.assertEqual(status, 4)
        self.assertLess(err.index("rank 1 exited with status 4"), err.index("rank 0 exited with status 5"))

    def test_rank_killed_by_signal(self):
        program = ("import os, signal\n"
                   "if os.environ['RANK'] == '1':\n"
                   "    os.kill(os.getpid(), signal.SIGKILL)\n")
        status, _, err, _ = dkrun("-n", "2", PY, "-c", program)
        self.assertEqual(status, 128 + signal.SIGKILL)
        self.assertIn("dkrun: rank 1 was killed by signal SIGKILL", err)

    def test_processes_started_by_a_stopped_rank_are_stopped_too(self):
        program = ("import os, subprocess, sys, time\n"
                   "if os.environ['RANK'] == '1':\n"
                   "    time.sleep(0.3); sys.exit(1)\n"
                   "child = subprocess.Popen(['sleep', '30'])\n"
                   "print(child.pid, flush=True)\n"
                   "child.wait()\n")
        status, out, err, _ = dkrun("-n", "2", "--grace", "0.2", PY, "-c", program)
        self.assertEqual(status, 1, err)
        pid = int(rank_lines(out, 0)[0])
        self.assertTrue(process_gone(pid), f"sleep {pid}, started by rank 0, still runs")

    def test_timeout_gives_124_and_names_the_running_ranks(self):
        status, out, err, seconds = dkrun("-n", "2", "--timeout", "0.5", PY, "-c", "import time; time.sleep(30)")
        self.assertEqual(status, 124)
        self.assertIn("dkrun: timed out after 0.5 s; ranks still running: 0, 1", err)
        self.assertLess(seconds, 4.5)

    def test_rank_ignoring_sigterm_gets_sigkill(self):
        module = load_dkrun()
        module.KILL_AFTER = 0.3
        program = ("import signal, time\n"
                   "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                   "print('ready', flush=True)\n"
                   "time.sleep(30)\n")
        out, err = io.BytesIO(), io.BytesIO()
        status = module.main(["-n", "1", "--timeout", "1", PY, "-c", program], stdout=out, stderr=err)
        self.assertEqual(status, 124)
        self.assertEqual(out.getvalue(), b"[rank 0] ready\n")
        self.assertIn(b"still running 0.3 s after SIGTERM; sending SIGKILL", err.getvalue())


class ArgumentsTest(unittest.TestCase):
    def test_n_must_be_positive(self):
        status, _, err, _ = dkrun("-n", "0", PY, "-c", "pass")
        self.assertEqual(status, 2)
        self.assertIn("-n must be at least 1", err)

    def test_program_is_required(self):
        status, _, err, _ = dkrun("-n", "2")
        self.assertEqual(status, 2)
        self.assertIn("missing PROGRAM", err)

    def test_program_that_does_not_exist(self):
        status, _, err, _ = dkrun("-n", "2", "/nonexistent/program")
        self.assertEqual(status, 127)
        self.assertIn("cannot run /nonexistent/program", err)


class SignalTest(unittest.TestCase):
    def test_sigint_is_forwarded_to_the_ranks(self):
        program = ("import signal, time\n"
                   "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
                   "print('ready', flush=True)\n"
                   "time.sleep(30)\n")
        proc = subprocess.Popen([PY, DKRUN, "-n", "2", PY, "-c", program],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            ready = b""
            deadline = time.monotonic() + 4
            while ready.count(b"ready") < 2 and time.monotonic() < deadline:
                if select.select([proc.stdout], [], [], 0.1)[0]:
                    ready += os.read(proc.stdout.fileno(), 4096)
            self.assertEqual(ready.count(b"ready"), 2, ready)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=4)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 128 + signal.SIGINT)
        self.assertIn(b"got SIGINT; sending SIGINT to all ranks", err)
        self.assertRegex(err.decode(), re.compile(r"rank [01] was killed by signal SIGINT"))


if __name__ == "__main__":
    unittest.main()
