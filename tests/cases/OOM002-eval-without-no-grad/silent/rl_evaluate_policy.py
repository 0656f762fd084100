# An RL policy evaluation: actions chosen under no_grad inside the episode loop.
import torch


def evaluate_policy(env, policy, episodes):
    returns = []
    for _ in range(episodes):
        obs, done, total = env.reset(), False, 0.0
        while not done:
            with torch.no_grad():
                action = policy(torch.as_tensor(obs)).argmax().item()
            obs, reward, done, _ = env.step(action)
            total += reward
        returns.append(total)
    return returns
