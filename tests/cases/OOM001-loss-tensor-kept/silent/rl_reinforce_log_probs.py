# REINFORCE keeps each step's log-probability, graph and all, for the backward at the episode's end.
import torch


def reinforce_episode(env, policy, optimizer, gamma=0.99):
    log_probs, rewards = [], []
    obs, done = env.reset(), False
    while not done:
        dist = torch.distributions.Categorical(logits=policy(torch.as_tensor(obs)))
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        obs, reward, done, _ = env.step(action.item())
        rewards.append(reward)
    returns = compute_returns(rewards, gamma)
    loss = -(torch.stack(log_probs) * returns).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return sum(rewards)
