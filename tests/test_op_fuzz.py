"""The short form of the op fuzzer (tests/op_fuzzer.py): a fixed seed, every custom op, in a subprocess, so that
a crash fails this test with the call that caused it. The long form: python tests/op_fuzzer.py --calls 10000."""
import os
import subprocess
import sys

import pytest

FUZZER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "op_fuzzer.py")


@pytest.mark.slow
def test_random_calls_to_every_op_raise_errors_and_never_crash(tmp_path):
    log = tmp_path / "calls.log"
    result = subprocess.run([sys.executable, FUZZER, "--calls", "600", "--seed", "20261201", "--log", str(log)],
                            capture_output=True, text=True, timeout=900)
    calls = log.read_text().splitlines() if log.exists() else []
    last = calls[-1] if calls else "(no call logged)"
    assert result.returncode == 0, (f"the fuzzer ended with code {result.returncode} at call:\n{last}\n"
                                    f"{result.stderr[-3000:]}")
    summary = result.stdout.strip().splitlines()[-1]  # (MuJoCo prints its warnings on stdout before it)
    assert summary.startswith("600 calls"), summary
    _, ran, refused, created, refused_models = (int(word) for word in summary.replace(":", " ").split()
                                                if word.isdigit())
    assert ran > 30 and refused > 300, result.stdout  # both valid and invalid calls were made
    assert created > 50 and refused_models > 10, result.stdout  # tasks on foreign models: both outcomes
