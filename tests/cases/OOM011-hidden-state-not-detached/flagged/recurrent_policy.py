import torch


def train(policy, env, optimizer, steps):
    obs = env.reset()
    hidden = policy.initial_state()
    for step in range(steps):
        logits, value, hidden = policy(obs, hidden)
        action = torch.distributions.Categorical(logits=logits).sample()
        obs, reward, done, _ = env.step(action)
        loss = -(value * reward).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
