//! oomlint: finds the patterns in PyTorch training scripts that waste GPU memory or end
//! in `torch.OutOfMemoryError`.

pub mod cli;
pub mod config;
pub mod diagnostic;
pub mod discover;
pub mod engine;
pub mod estimate;
pub mod explain;
pub mod fix;
pub mod lint;
pub mod measure;
pub mod notebook;
pub mod project;
pub mod render;
pub mod rules;
pub mod server;
pub mod snapshot;
pub mod source;
pub mod suppress;
