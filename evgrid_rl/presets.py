"""The training presets of ``python3 -m evgrid_rl.train``: one definition each."""

from __future__ import annotations

from dataclasses import dataclass, field

REPORT_SCENARIOS = ("evening_peak", "heatwave", "festival_surge", "feeder_fault")


@dataclass(frozen=True)
class Preset:
    name: str
    env: str  # "candidates" (rows) | "gym" (flat index) | "marl" (PettingZoo) | "marl-candidates"
    iterations: int
    batch_steps: int  # [env steps] per training iteration
    minibatch: int  # [env steps]
    epochs: int  # passes over each batch
    hidden: tuple[int, ...]  # the actor's (and critic's) MLP widths
    lr: float = 3e-4
    grad_clip: float | None = None  # the gradient's global norm, clipped
    critic_state: bool = True  # candidates: the critic also reads the city's vector
    entropy_coeff: float = 0.01
    gamma: float = 0.99  # the discount: per decision, or per minute (clock)
    clock: bool = False  # candidates: discount per minute of clock (clock_gae)
    lambda_: float = 0.95  # GAE
    clip: float = 0.2  # PPO's ratio clip
    vf_clip: float = 10.0  # [scaled reward] the value loss's clip
    reward_scale: float = 1.0  # the env's reward times this is what PPO sees
    num_envs: int = 1  # envs per runner, stepped together (one batched forward pass)
    compiled_batch: bool = (
        False  # gym: the envs as one compiled batch (EVGridVectorEnv)
    )
    env_runners: int = 0  # 0: sample in the driver
    num_cpus: int = 1  # [CPU] local Ray's size (None on a cluster)
    policies: str = "shared"  # marl: "shared" (one per role) | "separate" (per agent)
    scenarios: tuple[str, ...] = ("evening_peak",)
    seed: int = 0
    minutes: float = (
        0.0  # wall-clock budget (resumed runs count what they had); 0: none
    )
    eval_every: int = 0  # iterations between held-out checks (0: none)
    eval_seeds: int = 0  # validation seeds per scenario at each check
    warm_start: str = ""  # "distilled": behaviour cloning first (evgrid_rl.warm_start)
    bc_episodes: int = 0  # teacher episodes per scenario
    bc_epochs: int = 0
    notes: str = field(default="", compare=False)


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("cpu", "candidates", iterations=10_000, batch_steps=8000, minibatch=1000,
               epochs=6, hidden=(64, 64), lr=3e-4, critic_state=False, gamma=0.99,
               reward_scale=0.1, vf_clip=100.0, num_envs=8,
               num_cpus=2, scenarios=REPORT_SCENARIOS, minutes=35.0, eval_every=5,
               eval_seeds=4,
               notes="the earlier ppo: candidate rows scored by one MLP, the four "
                     "report scenarios, 35 minutes on this 2-core CPU, a discount per "
                     "decision (PPO drifts to deferring later; see cpu-clock)"),
        Preset("cpu-clock", "candidates", iterations=10_000, batch_steps=8000,
               minibatch=1000, epochs=6, hidden=(64, 64), lr=3e-4,
               critic_state=False, gamma=0.98, clock=True, reward_scale=0.01,
               vf_clip=100.0, num_envs=8, num_cpus=2, scenarios=REPORT_SCENARIOS,
               minutes=45.0, eval_every=5, eval_seeds=4,
               notes="the shipped ppo: cpu with the discount per minute of clock "
                     "(0.98/min, clock_gae) instead of per decision; about 2M env "
                     "steps in 45 minutes here; the snapshot shipped is the best on "
                     "validation seeds (evgrid_rl.validate)"),
        Preset("cpu-warm", "candidates", iterations=10_000, batch_steps=8000,
               minibatch=1000, epochs=6, hidden=(64, 64), lr=3e-5, grad_clip=0.5,
               entropy_coeff=0.001, gamma=1.0,
               reward_scale=0.01, vf_clip=100.0, num_envs=8, num_cpus=2,
               scenarios=REPORT_SCENARIOS, minutes=20.0, eval_every=5, eval_seeds=4,
               warm_start="distilled", bc_episodes=30, bc_epochs=20,
               notes="ppo_warm: the cpu preset warm-started by behaviour cloning "
                     "from distilled, then fine-tuned with a smaller step and "
                     "entropy bonus; reported apart from ppo"),
        Preset("cpu-flat", "gym", iterations=10_000, batch_steps=8000, minibatch=1000,
               epochs=6, hidden=(64, 64), reward_scale=0.1, vf_clip=100.0, num_envs=8,
               compiled_batch=True, num_cpus=2, scenarios=REPORT_SCENARIOS,
               minutes=60.0, eval_every=5, eval_seeds=4,
               notes="the same PPO on the flat index, sampled from the compiled "
                     "batch (EVGridVectorEnv), for the figure beside the candidate "
                     "interface"),
        Preset("cpu-small", "gym", iterations=12, batch_steps=1000, minibatch=250,
               epochs=4, hidden=(64, 64),
               notes="one CPU, 12k env steps (~40 episodes): a smoke of the loop, "
                     "too small to expect learning"),
        Preset("cpu-mappo", "marl-candidates", iterations=10_000, batch_steps=8000,
               minibatch=1000, epochs=6, hidden=(64, 64), lr=3e-4,
               critic_state=True, gamma=0.98, clock=True, reward_scale=0.01,
               vf_clip=100.0, num_envs=8, num_cpus=2, scenarios=REPORT_SCENARIOS,
               minutes=25.0, eval_every=5, eval_seeds=4,
               notes="the shipped mappo: fleets pick candidate rows, the operators "
                     "of feeders forecast over their limit may cap their stations "
                     "(evgrid_rl.candidate_marl), a team reward, the discount per "
                     "minute, 25 minutes"),
        Preset("cpu-marl-small", "marl", iterations=8, batch_steps=1000, minibatch=250,
               epochs=4, hidden=(64, 64),
               notes="one CPU, ~8k parallel steps: shows the multi-agent loop runs"),
        Preset("cluster", "candidates", iterations=500, batch_steps=64000,
               minibatch=4096, epochs=8, hidden=(256, 256), gamma=0.98, clock=True,
               reward_scale=0.01, vf_clip=100.0, num_envs=8, env_runners=62,
               num_cpus=64, scenarios=REPORT_SCENARIOS, eval_every=10, eval_seeds=8,
               notes="cpu-clock on a 64-CPU cluster: ~32M env steps"),
        Preset("cluster-marl", "marl-candidates", iterations=500, batch_steps=64000,
               minibatch=4096, epochs=8, hidden=(256, 256), critic_state=True,
               gamma=0.98, clock=True, reward_scale=0.01, vf_clip=100.0, num_envs=8,
               env_runners=62, num_cpus=64, scenarios=REPORT_SCENARIOS,
               eval_every=10, eval_seeds=8,
               notes="cpu-mappo on a 64-CPU cluster"),
    )
}  # fmt: skip


def modules_of(preset: Preset) -> dict[str, str]:
    """Multi-agent: each agent's RLlib module (policy): ``shared``, one per role
    (``fleet``, ``operator``); ``separate``, one per agent."""
    from evgrid_marl import make_roster

    agents = make_roster("both").agents
    if preset.policies == "shared":
        return {a: a.split("_")[0] for a in agents}
    return {a: a for a in agents}
