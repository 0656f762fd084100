//! Compiles `children.c` (see there) against the internal headers of the tree-sitter crate
//! this build links: its build script names its `include` directory, beside which its
//! sources lie.

use std::path::PathBuf;

fn main() {
    let include = PathBuf::from(std::env::var("DEP_TREE_SITTER_INCLUDE").expect("tree-sitter names its headers"));
    let sources = include.parent().expect("the tree-sitter crate's directory").join("src");
    println!("cargo:rerun-if-changed=src/engine/children.c");
    cc::Build::new()
        .std("c11")
        .include(&include)
        .include(&sources)
        .warnings(true)
        .file("src/engine/children.c")
        .compile("oomlint-children");
}
