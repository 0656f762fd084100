// One syntax tree of a module from the trees of consecutive pieces of its text, each
// piece whole top-level statements and parsed on its own (`pieces.rs`).
//
// A subtree stores its length and its padding (the whitespace before it), never where it
// starts: where a node is follows from the lengths of everything before it. So the
// pieces' top-level subtrees, taken as they are and put under one module node in order,
// lie at their places in the whole text, as long as no byte is lost between pieces: every
// piece but the last must end with its last statement's last token (the whitespace that
// follows is the padding of the next piece's first token). The first reparse after an
// edit takes the joined tree as its old tree with the seams marked changed (`pieces.rs`
// says why), and checks every subtree it reuses, as after any edit.

#include "tree_sitter/api.h"
#include "./array.h"
#include "./language.h"
#include "./subtree.h"
#include "./tree.h"

// The module-level subtree of `tree` (the repetition of its statements) when its root
// is that subtree and the end of input and nothing else, the end's padding and size
// being `end_bytes` at most; else NULL_SUBTREE.
static Subtree statements_of(const TSTree *tree, TSSymbol repeat, uint32_t end_bytes, Subtree *end) {
  Subtree root = tree->root;
  if (ts_subtree_child_count(root) != 2) return NULL_SUBTREE;
  Subtree statements = ts_subtree_children(root)[0];
  Subtree last = ts_subtree_children(root)[1];
  if (ts_subtree_symbol(statements) != repeat || ts_subtree_symbol(last) != ts_builtin_sym_end) return NULL_SUBTREE;
  if (ts_subtree_total_bytes(last) > end_bytes) return NULL_SUBTREE;
  if (end) *end = last;
  return statements;
}

// The tree of the whole text whose consecutive pieces `trees` are (`count` of them, at
// least two), each with a root of the module's statements (`repeat`, the grammar's
// repetition of them) and the end of input, or NULL when one has another shape or a
// piece but the last ends in whitespace. The trees are left as they are.
TSTree *oomlint_join_module_trees(const TSTree *const *trees, uint32_t count, TSSymbol repeat) {
  if (count < 2) return NULL;
  Subtree end = NULL_SUBTREE;
  for (uint32_t i = 0; i < count; i++) {
    bool last = i + 1 == count;
    if (!statements_of(trees[i], repeat, last ? UINT32_MAX : 0, last ? &end : NULL).ptr) return NULL;
  }
  const TSLanguage *language = trees[0]->language;
  // Folded left to right, each join a repetition of two, as the grammar's repetition
  // rule builds them.
  Subtree joined = statements_of(trees[0], repeat, 0, NULL);
  ts_subtree_retain(joined);
  for (uint32_t i = 1; i < count; i++) {
    Subtree next = statements_of(trees[i], repeat, i + 1 == count ? UINT32_MAX : 0, NULL);
    ts_subtree_retain(next);
    SubtreeArray pair = array_new();
    array_push(&pair, joined);
    array_push(&pair, next);
    joined = ts_subtree_from_mut(ts_subtree_new_node(repeat, &pair, 0, language));
  }
  ts_subtree_retain(end);
  SubtreeArray children = array_new();
  array_push(&children, joined);
  array_push(&children, end);
  Subtree root = ts_subtree_from_mut(ts_subtree_new_node(ts_subtree_symbol(trees[0]->root), &children, 0, language));
  return ts_tree_new(root, language, trees[0]->included_ranges, trees[0]->included_range_count);
}
