"""The training pieces that decide what GOODRL learns: rewards and returns."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from models.goodrl import GoodRL
from solvers.scheduling.features import GLOBAL_FEATURES, NODE_FEATURES, VM_FEATURES
from solvers.scheduling.workflow import Workflow
from training.goodrl import Step, episode, gae


def test_rewards_sum_to_minus_total_flowtime(classic: list[Workflow]) -> None:
    torch.manual_seed(0)
    model = GoodRL(NODE_FEATURES, VM_FEATURES, GLOBAL_FEATURES, 16)
    steps, mean_flow = episode(model, classic, random.Random(1), count=4)
    total = sum(s.reward for s in steps)
    assert total == pytest.approx(-mean_flow * 4 / 100.0, rel=1e-9)
    assert all(s.reward <= 0 for s in steps) and len(steps) > 4 * 20


def test_gae_with_lambda_one_is_the_discounted_return() -> None:
    steps = [Step(obs=None, action=0, logp=0.0, value=v, area=0.0, reward=r)  # type: ignore[arg-type]
             for v, r in ((1.0, -1.0), (0.5, -2.0), (2.0, -3.0))]
    adv, ret = gae(steps, gamma=0.5, lam=1.0, last_value=4.0)
    expected = [-1 + 0.5 * (-2 + 0.5 * (-3 + 0.5 * 4)), -2 + 0.5 * (-3 + 0.5 * 4), -3 + 0.5 * 4]
    assert ret.tolist() == pytest.approx(expected)
    assert adv.tolist() == pytest.approx(np.array(expected) - [1.0, 0.5, 2.0])


def test_lookahead_rollout_reproduces_the_simulator(classic: list[Workflow]) -> None:
    """The teacher's fast HEFT rollout must be the simulator's HEFT, or its look-ahead would
    judge VMs by a different system than the one it is scored on."""
    import heapq

    from solvers.scheduling.heuristics import HEFT
    from solvers.scheduling.simulator import Arrivals, make_stream, parse_pool, simulate
    from training.lookahead import _Template, heft_rollout

    pool, arrivals = parse_pool("6x4"), Arrivals(12, (9.0,))
    expected = simulate(classic, pool, arrivals, HEFT(), seed=3).flowtimes.sum()
    times, kinds = make_stream(classic, arrivals, 3)
    tpls = [_Template(w) for w in classic]
    runs = {uid: [tpls[k], list(tpls[k].n_parents), float(t), tpls[k].n]
            for uid, (t, k) in enumerate(zip(times, kinds, strict=True))}
    heap = [(float(t), uid, 0, uid, -1) for uid, t in enumerate(times)]
    heapq.heapify(heap)
    total = heft_rollout(list(pool.speeds), [0.0] * pool.size, 0.0, runs, heap, [])
    assert total == pytest.approx(expected, rel=1e-9)


def test_slack_rollout_reproduces_the_simulator(classic: list[Workflow]) -> None:
    """The same for the teacher built on the slack rule (``Lookahead(base="heft_slack")``)."""
    import heapq

    from solvers.scheduling.heuristics import HEFTSlack
    from solvers.scheduling.simulator import Arrivals, make_stream, parse_pool, simulate
    from training.lookahead import _Template, slack_rollout

    for name, seed in (("6x4", 3), ("5x5", 4)):
        pool, arrivals = parse_pool(name), Arrivals(40, (9.0,))
        expected = simulate(classic, pool, arrivals, HEFTSlack(), seed=seed).flowtimes.sum()
        times, kinds = make_stream(classic, arrivals, seed)
        tpls = [_Template(w) for w in classic]
        runs = {uid: [tpls[k], list(tpls[k].n_parents), float(t), tpls[k].n, {}]
                for uid, (t, k) in enumerate(zip(times, kinds, strict=True))}
        heap = [(float(t), uid, 0, uid, -1) for uid, t in enumerate(times)]
        heapq.heapify(heap)
        total = slack_rollout(list(pool.speeds), [0.0] * pool.size, 0.0, runs, heap, [])
        assert total == pytest.approx(expected, rel=1e-9)


def test_distillation_round_labels_states_and_resumes(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiny DAgger round end to end: teacher-labelled states saved, counters advanced,
    every target a non-empty set of VMs that includes a VM the teacher could pick."""
    import pickle

    import training.goodrl
    from training.goodrl import main

    for name in ("CHECKPOINT", "CURVE", "MANIFEST", "LOG", "WEIGHTS", "DISTILL_DATA",
                 "VAL_WORKFLOWS", "VAL_SEEDS"):  # main() points them at the scratch folder
        monkeypatch.setattr(training.goodrl, name, getattr(training.goodrl, name))

    # a small validation (it was 4 of the test's 4 minutes in CI at the full 100 workflows
    # × 3 seeds, run by both calls)
    small = ["--scratch", str(tmp_path), "--val-workflows", "12", "--val-seeds", "1"]
    main([*small, "--fresh", "--expert-episodes", "2", "--imitation-epochs", "1",
          "--offline-updates", "0", "--online-updates", "0", "--minutes", "5"])
    main([*small, "--distill", "1", "--distill-streams", "1", "--distill-workflows", "3",
          "--distill-steps-per-round", "3", "--teacher-samples", "2", "--minutes", "5"])
    data = pickle.loads((tmp_path / "distill.pkl").read_bytes())
    assert len(data) >= 25 and all(o.target.any() for o in data)
    ckpt = torch.load(tmp_path / "ckpt.pt", weights_only=False)
    assert ckpt["train"]["distill_rounds"] == 1 and ckpt["train"]["distill_steps"] == 3
    # the entry names the set it was validated on
    entry = json.loads((tmp_path / "MANIFEST.json").read_text())["checkpoints"][0]
    assert entry["validation"]["set"].endswith("12 workflows × seeds 1000")


def test_smaller_validation_needs_a_scratch_folder(capsys: pytest.CaptureFixture[str]) -> None:
    """A smaller validation set must never gate the shipped weights/goodrl.pt."""
    from training.goodrl import main

    with pytest.raises(SystemExit) as exc:
        main(["--val-workflows", "10", "--minutes", "0"])
    assert exc.value.code == 2 and "--scratch" in capsys.readouterr().err


def test_teacher_threshold_keeps_only_larger_departures(classic: list[Workflow]) -> None:
    """Without a threshold the teacher departs from HEFT on this busy stream; with a huge one
    it never does and its schedule is exactly HEFT's."""
    from solvers.scheduling.heuristics import HEFT
    from solvers.scheduling.simulator import Arrivals, parse_pool, simulate
    from training.lookahead import Lookahead

    pool, arrivals = parse_pool("5x5"), Arrivals(8, (30.0,))
    free = Lookahead(classic, 30.0, samples=2, arrivals=2, seed=5)
    simulate(classic, pool, arrivals, free, seed=4)
    strict = Lookahead(classic, 30.0, samples=2, arrivals=2, seed=5, threshold=1e9)
    result = simulate(classic, pool, arrivals, strict, seed=4)
    assert free.deviations > 0 and strict.deviations == 0
    heft = simulate(classic, pool, arrivals, HEFT(), seed=4)
    assert result.mean_flowtime == pytest.approx(heft.mean_flowtime, rel=1e-12)


def test_imitation_expert_is_the_strongest_correct_heuristic() -> None:
    from training.goodrl import strongest_heuristic

    ref = {"6x4@9.0": {"heft": 10.0, "eft": 11.0, "heft_slack": 9.9, "eft_stale": 5.0},
           "5x5@9.0": {"heft": 10.0, "eft": 9.8, "heft_slack": 9.9, "eft_stale": 5.0}}
    assert strongest_heuristic(ref) == "heft_slack"  # best on average; stale rules never count
    # a reference from before the slack rule existed keeps choosing among what it measured
    assert strongest_heuristic({"6x4@9.0": {"heft": 10.0, "eft": 11.0}}) == "heft"
