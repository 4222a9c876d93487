"""Ray and RLlib for EV Grid Oracle: episodes as Ray tasks, PPO on the envs.

``ray_runner``: ``evgrid compare --ray`` / ``evgrid labels --ray`` (the same files as
the single-process runs). ``train``: RLlib PPO with action masking on the Gymnasium
env and multi-agent PPO on the PettingZoo env (``python3 -m evgrid_rl.train``).
``policy``: the learnt PPO weights as the registered policy ``ppo`` (numpy only);
``mappo``: the multi-agent PPO's actors as the registered policy ``mappo`` (numpy and
the multi-agent env's view of each agent).
Importing this package loads none of Ray, RLlib or torch.
"""
