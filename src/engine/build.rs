//! Compiles `children.c` and `join.c` (see each) against the internal headers of the
//! tree-sitter crate this build links: its build script names its `include` directory,
//! beside which its sources lie.

use std::path::PathBuf;

fn main() {
    let include = PathBuf::from(std::env::var("DEP_TREE_SITTER_INCLUDE").expect("tree-sitter names its headers"));
    let sources = include.parent().expect("the tree-sitter crate's directory").join("src");
    println!("cargo:rerun-if-changed=src/engine/children.c");
    println!("cargo:rerun-if-changed=src/engine/join.c");
    cc::Build::new()
        .std("c11")
        .include(&include)
        .include(&sources)
        .warnings(true)
        .file("src/engine/children.c")
        .file("src/engine/join.c")
        .compile("oomlint-tree-internals");
}
