//! `oomlint explain`: reads the out-of-memory message in a log or traceback and says what
//! it means. `parse` reads the figures out of each message family; `verdict` decides.

pub mod parse;
pub mod verdict;

pub use parse::{Family, Message, messages};
pub use verdict::{Explanation, Verdict, explain, human};
