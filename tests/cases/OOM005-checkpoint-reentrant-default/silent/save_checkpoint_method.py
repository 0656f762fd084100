def on_epoch_end(trainer, model, path):
    trainer.save_checkpoint(path)
    model.checkpoint(path)
