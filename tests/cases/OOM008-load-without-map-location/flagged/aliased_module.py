# An RL agent restoring its networks; torch imported under another name.
import torch as T


class Agent:
    def load_models(self, path):
        self.actor.load_state_dict(T.load(path + "/actor.pt"))
        self.critic.load_state_dict(T.load(path + "/critic.pt", weights_only=True))
