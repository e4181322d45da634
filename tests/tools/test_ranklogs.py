"""tools/dk-ranklogs: agreement, where ranks diverge, whom it blames, and its errors.

The logs are written into a temporary directory in RankLogger's format. Run from the project root:
    python3 -m unittest discover -s tests/tools -t .
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RANKLOGS = os.path.join(ROOT, "tools", "dk-ranklogs")

RANDN = "dk::randn(float[2, 3]...)"
MM = "dk::mm(float[8, 4], float[4, 2])"
ADD = "dk::add.Tensor(float[8, 2], float[8, 2], 1)"
RELU = "dk::relu(float[8, 2])"
MUL = "dk::mul.Tensor(float[8, 2], float[8, 2])"
SUM = "dk::sum(float[8, 2])"


def all_reduce(group, seq):
    """A collective's line as RankLogger writes it, annotation included."""
    return f"c10d::all_reduce_(float[8, 2], sum, 0) [group={group} seq={seq}]"


class RankLogsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="dk-ranklogs-test-")
        self.addCleanup(shutil.rmtree, self.dir)

    def write(self, rank, ops, prefix="ops", first_counter=0, time_base=0):
        """Writes <prefix>.rank<rank>.log: ops numbered from first_counter, with made-up timestamps."""
        path = os.path.join(self.dir, f"{prefix}.rank{rank}.log")
        with open(path, "w", encoding="utf-8") as f:
            for k, op in enumerate(ops):
                f.write(f"{first_counter + k} {op} @{time_base + 10 * k + 7 * rank}us\n")

    def run_tool(self, *args):
        """Runs dk-ranklogs on the test's directory; returns (exit status, stdout, stderr)."""
        result = subprocess.run([sys.executable, RANKLOGS, self.dir, *args], capture_output=True, text=True,
                                timeout=10)
        return result.returncode, result.stdout, result.stderr

    def test_ranks_that_agree_despite_timestamps_and_counters(self):
        ops = [RANDN, MM, all_reduce(0, 1), ADD]
        self.write(0, ops)
        self.write(1, ops, time_base=5000)
        self.write(2, ops, first_counter=100, time_base=123)
        status, out, err = self.run_tool()
        self.assertEqual(status, 0, out + err)
        self.assertEqual(out, "all 3 ranks agree: 4 operators each\n")

    def test_majority_blames_the_rank_that_did_something_else(self):
        common = [RANDN, MM, all_reduce(0, 1)]
        for rank in (0, 1, 3):
            self.write(rank, common + [ADD, RELU])
        self.write(2, common + [all_reduce(0, 2), RELU])
        status, out, _ = self.run_tool()
        self.assertEqual(status, 1)
        self.assertIn("ranks diverge at operator #3\n"
                      f"  #0 {RANDN}\n  #1 {MM}\n  #2 {all_reduce(0, 1)}\n"
                      f"rank 0: {ADD}\nrank 1: {ADD}\nrank 2: {all_reduce(0, 2)}\nrank 3: {ADD}\n", out)
        self.assertIn("diverged: rank 2 (did c10d::all_reduce_(float[8, 2], sum, 0) [collective 2 of group 0] "
                      f"where ranks 0, 1, 3 did {ADD})", out)
        self.assertEqual(out.count("diverged:"), 1)

    def test_two_ranks_one_skipped_an_all_reduce(self):
        before = [RANDN, MM, ADD, all_reduce(0, 1)]
        after = [RELU, MUL, SUM, ADD]
        self.write(0, before + [all_reduce(1, 2)] + after)
        self.write(1, before + after)
        status, out, _ = self.run_tool()
        self.assertEqual(status, 1)
        self.assertIn("ranks diverge at operator #4\n", out)
        self.assertIn(f"rank 0: {all_reduce(1, 2)}\nrank 1: {RELU}\n", out)
        self.assertIn("diverged: rank 1 skipped c10d::all_reduce_(float[8, 2], sum, 0) [collective 2 of group 1] "
                      "(which rank 0 did as operator #4)", out)

    def test_a_skip_is_found_though_later_collectives_are_numbered_one_lower(self):
        # After skipping collective 2, rank 1 calls its next all_reduce collective 2 where rank 0 says 3.
        before = [MM, all_reduce(0, 1), ADD]
        self.write(0, before + [all_reduce(0, 2), MUL, all_reduce(0, 3), ADD])
        self.write(1, before + [MUL, all_reduce(0, 2), ADD])
        status, out, _ = self.run_tool()
        self.assertEqual(status, 1)
        self.assertIn("diverged: rank 1 skipped c10d::all_reduce_(float[8, 2], sum, 0) [collective 2 of group 0] "
                      "(which rank 0 did as operator #3)", out)

    def test_with_a_majority_a_skip_is_named_as_one(self):
        before = [MM, all_reduce(0, 1), ADD]
        for rank in (0, 2, 3):
            self.write(rank, before + [all_reduce(0, 2), MUL, all_reduce(0, 3)])
        self.write(1, before + [MUL, all_reduce(0, 2)])
        status, out, _ = self.run_tool()
        self.assertEqual(status, 1)
        self.assertIn("diverged: rank 1 skipped c10d::all_reduce_(float[8, 2], sum, 0) [collective 2 of group 0] "
                      "(which ranks 0, 2, 3 did as operator #3)", out)

    def test_skip_blames_the_side_that_skipped_whichever_rank_it_is(self):
        before = [RANDN, MM]
        self.write(0, before + [RELU, MUL])
        self.write(1, before + [all_reduce(0, 1), RELU, MUL])
        status, out, _ = self.run_tool()
        self.assertEqual(status, 1)
        self.assertIn("diverged: rank 0 skipped c10d::all_reduce_(float[8, 2], sum, 0) [collective 1 of group 0] "
                      "(which rank 1 did as operator #2)", out)

    def test_no_majority_and_no_skip(self):
        self.write(0, [RANDN, MM, ADD, SUM])
        self.write(1, [RANDN, MM, RELU, MUL])
        status, out, _ = self.run_tool()
        self.assertEqual(status, 1)
        self.assertIn(f"rank 0: {ADD}\nrank 1: {RELU}\n", out)
        self.assertIn("diverged: no majority; ranks differ as shown above", out)

    def test_a_log_that_ends_early(self):
        self.write(0, [RANDN, MM, ADD, RELU])
        self.write(1, [RANDN, MM])
        self.write(2, [RANDN, MM, ADD, RELU])
        status, out, _ = self.run_tool()
        self.assertEqual(status, 1)
        self.assertIn("ranks diverge at operator #2\n", out)
        self.assertIn("rank 1: <log ends after 2 operators>\n", out)
        self.assertIn(f"diverged: rank 1 (log ends where ranks 0, 2 did {ADD})", out)

    def test_the_majority_of_logs_end(self):
        self.write(0, [RANDN, MM, all_reduce(0, 1)])
        self.write(1, [RANDN, MM])
        self.write(2, [RANDN, MM])
        status, out, _ = self.run_tool()
        self.assertEqual(status, 1)
        self.assertIn("diverged: rank 0 (did c10d::all_reduce_(float[8, 2], sum, 0) [collective 1 of group 0] "
                      "where the logs of ranks 1, 2 end)", out)

    def test_context_option(self):
        for rank, last in ((0, ADD), (1, ADD), (2, RELU)):
            self.write(rank, [RANDN, MM, SUM, MUL, last])
        status, out, _ = self.run_tool("--context", "1")
        self.assertEqual(status, 1)
        self.assertIn(f"ranks diverge at operator #4\n  ...\n  #3 {MUL}\nrank 0: {ADD}\n", out)
        self.assertNotIn(f"#2 {SUM}", out)

    def test_several_prefixes_need_prefix(self):
        self.write(0, [RANDN, MM], prefix="first")
        self.write(1, [RANDN, MM], prefix="first")
        self.write(0, [RANDN, MM], prefix="second")
        self.write(1, [RANDN, ADD], prefix="second")
        status, out, err = self.run_tool()
        self.assertEqual(status, 2)
        self.assertEqual(out, "")
        self.assertIn("first", err)
        self.assertIn("second", err)
        self.assertIn("--prefix", err)

    def test_prefix_selects_the_run(self):
        self.write(0, [RANDN, MM], prefix="first")
        self.write(1, [RANDN, MM], prefix="first")
        self.write(0, [RANDN, MM], prefix="second")
        self.write(1, [RANDN, ADD], prefix="second")
        status, out, _ = self.run_tool("--prefix", "first")
        self.assertEqual((status, out), (0, "all 2 ranks agree: 2 operators each\n"))
        status, out, _ = self.run_tool("--prefix", "second")
        self.assertEqual(status, 1)
        self.assertIn("ranks diverge at operator #1", out)
        status, _, err = self.run_tool("--prefix", "third")
        self.assertEqual(status, 2)
        self.assertIn("third", err)

    def test_no_logs(self):
        with open(os.path.join(self.dir, "notes.txt"), "w") as f:
            f.write("not a log\n")
        status, out, err = self.run_tool()
        self.assertEqual(status, 2)
        self.assertIn("no rank logs", err)

    def test_missing_rank_is_warned_about_and_left_out(self):
        self.write(0, [RANDN, MM])
        self.write(2, [RANDN, MM])
        status, out, err = self.run_tool()
        self.assertEqual(status, 0)
        self.assertIn("warning: no log for rank 1", err)
        self.assertEqual(out, "all 2 ranks agree: 2 operators each\n")

    def test_help_from_the_executable(self):
        result = subprocess.run([RANKLOGS, "--help"], capture_output=True, text=True, timeout=10)
        self.assertEqual(result.returncode, 0)
        self.assertIn("usage: dk-ranklogs DIR", result.stdout)


if __name__ == "__main__":
    unittest.main()
