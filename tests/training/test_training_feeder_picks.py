"""Who picks the overloading ROUTEs (training.feeder_picks), on labels whose answers
are greedy_eta's own: the "optimum" column and greedy_eta's must then be the same
picks, and a policy that never routes where the rule says overload scores 0."""

from __future__ import annotations

import test_training_oracle_sft as fake  # same folder

from training.feeder_picks import SOURCE, contested_states, main, measure


def test_the_labels_answers_are_counted_as_the_policy_that_made_them(
    tmp_path, monkeypatch, capsys
) -> None:
    monkeypatch.setattr(fake, "SCENARIO", "feeder_fault")
    fake.write_fake_labels(tmp_path, range(0, 2))
    states = list(contested_states(tmp_path, range(0, 2), ("feeder_fault",)))
    assert states, "feeder_fault has states where some ROUTE would overload"
    for _, _, c, over in states:
        assert any(over.values()) and not all(over.values())
        assert list(over) == c.lines
    r = measure(
        tmp_path, range(0, 2), ("feeder_fault",), ["greedy_eta", "urgency_first"], 0
    )
    assert r[SOURCE]["states"] == r["greedy_eta"]["states"] == len(states)
    assert r[SOURCE]["overloading_share"] == r["greedy_eta"]["overloading_share"]
    assert r["greedy_eta"]["where_optimum_did_not"] == 0.0
    assert 0.0 <= r["urgency_first"]["overloading_share"] <= 1.0
    assert main(["--labels", str(tmp_path), "--seeds", "0:2", "--scenarios", "feeder_fault",
                 "--policies", "greedy_eta"]) == 0  # fmt: skip
    assert "greedy_eta" in capsys.readouterr().out
