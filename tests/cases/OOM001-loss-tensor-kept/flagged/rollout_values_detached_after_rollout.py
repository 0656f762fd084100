# The rollout runs the critic with gradients on, keeps every estimate with its graph,
# and only detaches them once the rollout is over: nothing ever backpropagates through
# those graphs, yet every rollout step's activations stay alive until its end.
import torch


def collect(envs, net, obs, rollout_steps=128):
    estimates, rewards = [], []
    for _ in range(rollout_steps):
        dist, estimate = net(torch.as_tensor(obs))
        obs, reward, done, _ = envs.step(dist.sample().numpy())
        estimates.append(estimate)
        rewards.append(torch.as_tensor(reward))
    estimates = torch.cat(estimates).detach()
    advantages = discounted(rewards) - estimates
    update_policy(advantages)
    return obs
