"""RLlib for EV Grid Oracle: PPO on the envs (``evgrid compare --ray`` and
``evgrid labels --ray`` run beside their jobs: ``evaluation.ray_compare``,
``training.ray_labels``). ``train``: RLlib PPO with action masking on the Gymnasium
env and multi-agent PPO on the PettingZoo env (``python3 -m evgrid_rl.train``).
``policy``: the learnt PPO weights as the registered policy ``ppo`` (numpy only);
``mappo``: the multi-agent PPO's actors as the registered policy ``mappo`` (numpy and
the multi-agent env's view of each agent).
Importing this package loads none of Ray, RLlib or torch.
"""
