import torch


def collect(policy, env, steps):
    obs, hidden = env.reset(), policy.initial_state()
    trajectory = []
    with torch.no_grad():
        for _ in range(steps):
            logits, value, hidden = policy(obs, hidden)
            obs, reward, done, _ = env.step(logits.argmax(-1))
            trajectory.append((obs, reward))
    return trajectory
