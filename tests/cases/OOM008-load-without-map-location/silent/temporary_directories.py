# Files under a temporary directory this run made, or pytest's own: read back by the
# process that wrote them.
import os
import tempfile

import torch


def save_and_reload(head):
    with tempfile.TemporaryDirectory() as scratch:
        torch.save(head.state_dict(), os.path.join(scratch, "head.bin"))
        return torch.load(scratch + "/head.bin")


def test_head_survives_a_reload(tmp_path, head):
    torch.save(head.state_dict(), tmp_path / "head.bin")
    restored = torch.load(tmp_path / "head.bin")
    assert restored.keys() == head.state_dict().keys()
