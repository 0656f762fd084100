//! Which stack frames are the user's own code. Memory is charged to the deepest frame
//! of the user's code: `h = self.act(self.fc(x))` in their model, not
//! `torch/nn/modules/linear.py`, which allocated on its behalf.

use super::model::Frame;

/// Packages whose frames are folded into the user's frame that called them. The profiler
/// writes paths relative to `sys.path` (`torch/nn/modules/linear.py`), so a relative path
/// is a library's when its first directory is one of these.
const LIBRARIES: &[&str] = &[
    "torch",
    "torchvision",
    "torchaudio",
    "torchtext",
    "torchdata",
    "torchmetrics",
    "torchrl",
    "tensordict",
    "functorch",
    "triton",
    "transformers",
    "accelerate",
    "deepspeed",
    "lightning",
    "pytorch_lightning",
    "lightning_fabric",
    "timm",
    "diffusers",
    "peft",
    "trl",
    "datasets",
    "numpy",
    "apex",
    "xformers",
    "flash_attn",
    "einops",
    "bitsandbytes",
    "huggingface_hub",
    "safetensors",
    "fairscale",
    "megatron",
    "opacus",
    "vllm",
    "sentence_transformers",
    "tqdm",
    "hydra",
    "omegaconf",
    "pytest",
    "_pytest",
    "IPython",
    "ipykernel",
];

/// Standard-library modules that call back into user code (and so sit in its stacks).
const STDLIB: &[&str] = &[
    "abc",
    "argparse",
    "asyncio",
    "bdb",
    "cProfile",
    "code",
    "codeop",
    "collections",
    "concurrent",
    "contextlib",
    "copy",
    "copyreg",
    "dataclasses",
    "enum",
    "functools",
    "importlib",
    "inspect",
    "logging",
    "multiprocessing",
    "pdb",
    "pickle",
    "pkgutil",
    "profile",
    "queue",
    "runpy",
    "selectors",
    "threading",
    "timeit",
    "trace",
    "traceback",
    "typing",
    "unittest",
    "warnings",
    "weakref",
    "_weakrefset",
];

/// Whether the frame is Python source (not C++, not a built-in, not a module marker).
pub fn is_python_source(frame: &Frame) -> bool {
    frame.line > 0 && (frame.file.ends_with(".py") || is_notebook_cell(&frame.file))
}

fn is_notebook_cell(file: &str) -> bool {
    file.starts_with("<ipython-input-") || file.contains("/ipykernel_")
}

/// Whether the frame is in the user's own code: Python source outside site-packages,
/// the standard library and the libraries above.
pub fn is_user(frame: &Frame) -> bool {
    if !is_python_source(frame) {
        return false;
    }
    let file = frame.file.replace('\\', "/");
    if is_notebook_cell(&file) {
        return true;
    }
    if file.starts_with('<') {
        return false; // <frozen runpy>, <string>
    }
    const LIBRARY_DIRS: &[&str] = &["/site-packages/", "/dist-packages/", "/lib/python3", "/lib64/python3", "/torch/"];
    if LIBRARY_DIRS.iter().any(|dir| file.contains(dir)) {
        return false;
    }
    let absolute = file.starts_with('/') || file.get(1..3) == Some(":/");
    if absolute {
        return true;
    }
    let first = file.trim_start_matches("./").split('/').next().unwrap_or("");
    let module = first.strip_suffix(".py").unwrap_or(first);
    !LIBRARIES.contains(&module) && !STDLIB.contains(&module)
}

/// The deepest frame of the user's code in a stack (innermost first).
pub fn deepest_user_frame(frames: &[Frame]) -> Option<&Frame> {
    frames.iter().find(|f| is_user(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(file: &str) -> Frame {
        Frame { file: file.into(), line: 3, function: "f".into() }
    }

    #[test]
    fn library_and_stdlib_frames_are_folded() {
        for file in [
            "torch/nn/modules/linear.py",
            "/usr/lib/python3.11/contextlib.py",
            "/home/u/.venv/lib/python3.11/site-packages/transformers/trainer.py",
            "/usr/local/lib/python3.10/dist-packages/accelerate/accelerator.py",
            "/opt/pytorch/torch/nn/modules/module.py",
            "contextlib.py",
            "concurrent/futures/thread.py",
            "<frozen runpy>",
            "transformers/models/llama/modeling_llama.py",
        ] {
            assert!(!is_user(&frame(file)), "{file}");
        }
    }

    #[test]
    fn the_users_files_are_kept() {
        for file in ["train.py", "/home/u/project/model.py", "models/unet.py", "/tmp/ipykernel_12/3.py", "C:/work/x.py"]
        {
            assert!(is_user(&frame(file)), "{file}");
        }
    }

    #[test]
    fn profiler_names_are_split_and_markers_are_not_source() {
        let f = Frame::from_recorded("none".into(), 0, "tests/train.py(12): forward".into());
        assert_eq!((f.file.as_str(), f.line, f.function.as_str()), ("tests/train.py", 12, "forward"));
        assert!(is_user(&f));
        let marker = Frame::from_recorded("none".into(), 0, "nn.Module: Linear_0".into());
        assert!(!is_python_source(&marker));
        let builtin = Frame::from_recorded("none".into(), 0, "<built-in method relu of type object at 0x7f>".into());
        assert!(!is_python_source(&builtin));
    }
}
