# Options are written `name:value`; with `=` the whole item is read as one unknown name.
import argparse
import os


def run():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=int, default=0)
    args = parser.parse_args()
    os.environ["CUDA_VISIBLE_DEVICES"] = str(args.gpu)
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "max_split_size_mb=512"
    from trainer import train

    train(args)
