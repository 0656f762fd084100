# An RL policy evaluation that forgot no_grad: every step's forward pass keeps its graph.
import torch


def evaluate_policy(env, policy, episodes):
    returns = []
    for _ in range(episodes):
        obs, done, total = env.reset(), False, 0.0
        while not done:
            logits = policy(torch.as_tensor(obs))
            action = logits.argmax().item()
            obs, reward, done, _ = env.step(action)
            total += reward
        returns.append(total)
    return returns
