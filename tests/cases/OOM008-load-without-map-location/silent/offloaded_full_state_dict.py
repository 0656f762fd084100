# Full state dicts gathered to the CPU before they are written.
import torch
from torch.distributed.fsdp import FullStateDictConfig, StateDictType
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

policy = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)


def load_full(model, path):
    state = torch.load(path)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, policy):
        model.load_state_dict(state)
