import torch


def autocast():
    return None


class GradScaler:
    pass


with autocast():
    pass
scaler = GradScaler()


def run(autocast, amp):
    with autocast():
        amp.GradScaler()
