# Two image translators with short names are put in eval mode to render a preview grid
# every few hundred batches; the forwards run with autograd on, so both graphs are kept
# until the grid is written.
import torch
from torchvision.utils import save_image
from nets import Translator

to_night = Translator().cuda()
to_day = Translator().cuda()


def render_preview(day_batch, night_batch, step):
    to_night.eval()
    to_day.eval()
    night_guess = to_night(day_batch.cuda())
    day_guess = to_day(night_batch.cuda())
    save_image(torch.cat((night_guess, day_guess)), f"preview_{step}.png")
    to_night.train()
    to_day.train()
