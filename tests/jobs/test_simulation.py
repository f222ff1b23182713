"""The simulation document: load warnings from the recorded results, and the stored job
input read back as the same simulation."""

from __future__ import annotations

from jobs.simulation import Simulation, simulation_document
from solvers.scheduling.simulator import Arrivals, parse_pool
from solvers.scheduling.workflow import classic_templates


def _sim(pool: str, rate: float, count: int = 45, seed: int = 0) -> Simulation:
    return Simulation(classic_templates(), parse_pool(pool), Arrivals(count, (rate,)),
                      ["heft", "eft"], seed=seed)


def test_an_overloaded_pool_is_warned_about() -> None:
    # the stream asks for all of a 3x2 pool's capacity: the queue builds up and stays
    doc = simulation_document(_sim("3x2", 7.7))
    codes = {w["code"]: w for w in doc["warnings"]}
    assert set(codes) == {"pool-overloaded", "flowtimes-growing"}, doc["warnings"]
    assert "heft" in codes["pool-overloaded"]["policies"]
    # the figure quoted is the run's own, recomputed by the checker
    heft = next(r for r in doc["rows"] if r["policy"] == "heft")
    assert heft["checked"] is True and heft["utilization"] > 0.9
    assert f"heft {heft['utilization']:.3f}" in codes["pool-overloaded"]["detail"]
    assert "last third" in codes["flowtimes-growing"]["detail"]


def test_a_light_load_has_no_warning() -> None:
    # a third of a 6x4 pool's capacity
    doc = simulation_document(_sim("6x4", 21.7))
    assert doc["warnings"] == []
    assert all(r["utilization"] < 0.9 for r in doc["rows"])


def test_a_short_stream_is_not_judged_on_its_trend() -> None:
    # ten workflows are too few for thirds to say anything; utilization still counts
    doc = simulation_document(_sim("1x1", 60.0, count=10))
    assert [w["code"] for w in doc["warnings"]] == ["pool-overloaded"]


def test_the_stored_input_reads_back_as_the_same_simulation() -> None:
    sim = _sim("8,16,96", 9.0)
    back = Simulation.from_json(sim.to_json())
    assert back.pool == sim.pool and back.arrivals == sim.arrivals
    assert [w.to_dict() for w in back.templates] == [w.to_dict() for w in sim.templates]
    assert simulation_document(back)["rows"][0]["mean_flowtime"] == simulation_document(
        sim)["rows"][0]["mean_flowtime"]
