# `update_model` runs an optimisation step and hands back Python numbers for the
# plots; a method named for what it does to a network is not the network.
import torch


class Agent:
    def __init__(self, actor, critic, optimizer):
        self.actor, self.critic, self.optimizer = actor, critic, optimizer

    def update_model(self, batch):
        actor_term = -self.critic(batch, self.actor(batch)).mean()
        self.optimizer.zero_grad()
        actor_term.backward()
        self.optimizer.step()
        return actor_term.item(), 0.0

    def train(self, batches):
        actor_history, critic_history = [], []
        for batch in batches:
            actor_part, critic_part = self.update_model(batch)
            actor_history.append(actor_part)
            critic_history.append(critic_part)
        return actor_history, critic_history
