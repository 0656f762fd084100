# An advantage actor-critic collects the critic's estimates over a short rollout with
# their graphs on purpose: the update at the rollout's end backpropagates through them,
# by way of intermediate names, or inside a helper of the same file that receives them.
import torch


def a2c_iteration(envs, net, optimizer, obs, num_steps=16):
    estimates, log_probs, rewards = [], [], []
    for _ in range(num_steps):
        dist, estimate = net(torch.as_tensor(obs))
        action = dist.sample()
        obs, reward, done, _ = envs.step(action.numpy())
        estimates.append(estimate)
        log_probs.append(dist.log_prob(action))
        rewards.append(torch.as_tensor(reward))
    targets = discounted(rewards).detach()
    estimates = torch.cat(estimates)
    gap = targets - estimates
    value_term = gap.pow(2).mean()
    total = value_term - (torch.cat(log_probs) * gap.detach()).mean()
    optimizer.zero_grad()
    total.backward()
    optimizer.step()
    return obs


def replay_update(optimizer, chosen, estimates, rewards):
    objective = 0
    for t in range(len(rewards)):
        objective += (rewards[t] - estimates[t]).pow(2).mean() - chosen[t].log().mean()
    optimizer.zero_grad()
    objective.backward()
    optimizer.step()


def off_policy_iteration(env, net, optimizer, obs, num_steps=8):
    chosen, estimates, rewards = [], [], []
    for _ in range(num_steps):
        probs, estimate = net(torch.as_tensor(obs))
        action = probs.multinomial(1)
        obs, reward, done, _ = env.step(action.item())
        chosen.append(probs.gather(1, action))
        estimates.append(estimate)
        rewards.append(reward)
    replay_update(optimizer, chosen, estimates, rewards)
    return obs
