"""The op fuzzer (tests/ops/op_fuzzer.py): a fixed seed, every custom op, in a subprocess, so that a crash fails
this test with the call that caused it. make test runs the short form (300 calls), the parity tier the long form
(10,000 calls of another seed)."""

import os
import subprocess
import sys

import pytest

FUZZER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "op_fuzzer.py")


@pytest.mark.slow
@pytest.mark.parametrize("calls,seed", [(300, 20261201), pytest.param(10000, 20261203, marks=pytest.mark.parity)])
def test_random_calls_to_every_op_raise_errors_and_never_crash(tmp_path, calls, seed):
    log = tmp_path / "calls.log"
    result = subprocess.run(
        [sys.executable, FUZZER, "--calls", str(calls), "--seed", str(seed), "--log", str(log)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    logged = log.read_text().splitlines() if log.exists() else []
    last = logged[-1] if logged else "(no call logged)"
    assert result.returncode == 0, f"the fuzzer ended with code {result.returncode} at call:\n{last}\n{result.stderr[-3000:]}"
    summary = result.stdout.strip().splitlines()[-1]  # (MuJoCo prints its warnings on stdout before it)
    assert summary.startswith(f"{calls} calls"), summary
    _, ran, refused, created, refused_models = (int(word) for word in summary.replace(":", " ").split() if word.isdigit())
    assert ran > calls // 20 and refused > calls // 2, result.stdout  # both valid and invalid calls were made
    assert created > 50 and refused_models > 10, result.stdout  # tasks on foreign models: both outcomes
