# A policy's `evaluate_actions` is a training-time forward whose outputs the update
# backpropagates through; a validation routine under the project's own inference-mode
# decorator is already graph-free.
from project.torch_utils import smart_inference_mode


class Policy:
    def evaluate_actions(self, obs, actions):
        features = self.extract_features(obs)
        values = self.value_net(features)
        log_prob = self.action_dist(features).log_prob(actions)
        return values, log_prob

    def extract_features(self, obs):
        return self.features_net(obs)


@smart_inference_mode()
def validate(model, val_loader):
    model.eval()
    return [model(x).argmax(1) for x in val_loader]
