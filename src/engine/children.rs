//! A node's children, with the field each holds, listed in one pass (`children.c`):
//! tree-sitter answers "child i" and "the field of child i" each by iterating from the
//! first child, and its cursor keeps a stack of entries at every step, which a walk that
//! lists the children of every node of a file pays for at every node.

use std::num::NonZeroU16 as FieldId;
use tree_sitter::Node;

/// A child of a node, with the field it holds in its parent (or in the hidden node it lies
/// in, as tree-sitter's cursor answers) and its kind id (`Node::kind_id`, which is a call
/// into tree-sitter). Laid out as `children.c` writes it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Child<'t> {
    pub node: Node<'t>,
    pub field: Option<FieldId>,
    pub kind: u16,
    /// Where it ends (`Node::end_byte`): known to the listing, where the node's end read
    /// later from its subtree is a cache miss in a large tree.
    pub end: u32,
}

unsafe extern "C" {
    fn oomlint_list_children(node: tree_sitter::ffi::TSNode, tokens: bool, out: *mut Child<'_>, capacity: u32) -> u32;
}

/// Append `node`'s children to `into`, in order, each with its field; anonymous leaves
/// (brackets, commas, operators, keywords) only when `tokens`.
pub fn list<'t>(node: Node<'t>, tokens: bool, into: &mut Vec<Child<'t>>) {
    // Every visible child, anonymous ones too: the most there can be.
    let count = node.child_count() as usize;
    if count == 0 {
        return;
    }
    into.reserve(count);
    let spare = into.spare_capacity_mut();
    // SAFETY: `node` is a node of a tree alive for 't; the function writes at most
    // `capacity` children, each a node of that tree and a field id or 0 (`None`), into
    // the room `spare` reserves, and returns how many there are.
    let listed =
        unsafe { oomlint_list_children(node.into_raw(), tokens, spare.as_mut_ptr().cast(), spare.len() as u32) }
            as usize;
    debug_assert!(listed <= count, "{listed} children listed of {count}");
    let written = listed.min(spare.len());
    // SAFETY: the first `written` entries of the spare room were written above.
    unsafe { into.set_len(into.len() + written) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tree::KindName;

    /// The children listed are those tree-sitter's cursor visits, with the fields it
    /// gives, and without tokens the named ones and those with children: over every node
    /// of every fixture and test case, fields inherited through hidden nodes, aliases,
    /// and comments among children included.
    #[test]
    fn children_listed_are_those_a_cursor_visits_with_its_fields() {
        let mut sources = crate::engine::fixture_and_test_sources();
        sources.push(
            "x = (a  # one\n     , b)\nd[k] += f(*a, k=1)\n@dec\ndef g(a: int = 1, *, b) -> int: ...\nprint >> f, x\n"
                .into(),
        );
        assert!(sources.len() > 20, "found {} sources", sources.len());
        let (mut fields, mut nodes) = (0, 0);
        for source in &sources {
            let tree = crate::engine::parse(source).expect("parse");
            let mut cursor = tree.root_node().walk();
            for node in crate::engine::tree::descendants(tree.root_node()) {
                let mut by_cursor = Vec::new();
                cursor.reset(node);
                if cursor.goto_first_child() {
                    loop {
                        let child = cursor.node();
                        by_cursor.push((
                            child.id(),
                            child.kind_id(),
                            child.start_byte(),
                            child.start_position(),
                            cursor.field_id(),
                        ));
                        if !cursor.goto_next_sibling() {
                            break;
                        }
                    }
                }
                let mut listed = Vec::new();
                list(node, true, &mut listed);
                assert!(listed.iter().all(|c| c.kind == c.node.kind_id()));
                assert!(listed.iter().all(|c| c.end as usize == c.node.end_byte()));
                let listed: Vec<_> = listed
                    .iter()
                    .map(|c| (c.node.id(), c.kind, c.node.start_byte(), c.node.start_position(), c.field))
                    .collect();
                assert_eq!(listed, by_cursor, "{}", node.kind_name());
                let mut without_tokens = Vec::new();
                list(node, false, &mut without_tokens);
                let kept: Vec<usize> = (0..node.child_count())
                    .filter_map(|i| node.child(i))
                    .filter(|c| c.is_named() || c.child_count() > 0)
                    .map(|c| c.id())
                    .collect();
                assert_eq!(without_tokens.iter().map(|c| c.node.id()).collect::<Vec<_>>(), kept);
                fields += listed.iter().filter(|c| c.4.is_some()).count();
                nodes += 1;
            }
        }
        assert!(fields > 1000 && nodes > 10_000, "{fields} fields over {nodes} nodes");
    }
}
