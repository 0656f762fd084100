# The session is released after a generation whether it succeeds or not: the handler
# repeats the `try`'s release call to clean up, then reports the failure and gives up.
import gc

import torch


def render(pipeline, sessions, request):
    session = sessions.open(request.model)
    try:
        frames = pipeline(request.prompt, session=session)
        sessions.release_session(session)
    except RuntimeError as error:
        sessions.release_session(session)
        gc.collect()
        torch.cuda.empty_cache()
        if "out of memory" in str(error):
            return None, "not enough GPU memory: lower the resolution or the frame count"
        raise
    return frames, None
