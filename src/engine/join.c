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

// Where a piece's statements are among its root's children: the repetition of them
// (`repeat`, the grammar's) or its one statement, after nothing but the comments that
// open the file when `opening` (a license header or a shebang line precede the code of
// most files), before nothing but the comments that close it when `closing`, and then
// the end of input, its padding and size `end_bytes` at most. UINT32_MAX when the root
// has another shape.
static uint32_t statements_at(const TSTree *tree, bool opening, bool closing, uint32_t end_bytes) {
  Subtree root = tree->root;
  uint32_t count = ts_subtree_child_count(root);
  if (count < 2) return UINT32_MAX;
  const Subtree *children = ts_subtree_children(root);
  Subtree end = children[count - 1];
  if (ts_subtree_symbol(end) != ts_builtin_sym_end || ts_subtree_total_bytes(end) > end_bytes) return UINT32_MAX;
  uint32_t at = 0;
  while (at < count - 1 && ts_subtree_extra(children[at])) at++;
  if (at == count - 1 || (at > 0 && !opening)) return UINT32_MAX;
  for (uint32_t after = at + 1; after < count - 1; after++) {
    if (!closing || !ts_subtree_extra(children[after])) return UINT32_MAX;
  }
  return at;
}

// The tree of the whole text whose consecutive pieces `trees` are (`count` of them, at
// least two), each a root of the module's statements and the end of input (see
// `statements_at`), or NULL when one has another shape or a piece but the last ends in
// whitespace. The trees are left as they are.
TSTree *oomlint_join_module_trees(const TSTree *const *trees, uint32_t count, TSSymbol repeat) {
  if (count < 2) return NULL;
  for (uint32_t i = 0; i < count; i++) {
    if (statements_at(trees[i], i == 0, i + 1 == count, i + 1 == count ? UINT32_MAX : 0) == UINT32_MAX) return NULL;
  }
  uint32_t opening = statements_at(trees[0], true, false, 0);
  uint32_t closing = statements_at(trees[count - 1], false, true, UINT32_MAX);
  const TSLanguage *language = trees[0]->language;
  // Folded left to right, each join a repetition of two, as the grammar's repetition
  // rule builds them.
  Subtree joined = ts_subtree_children(trees[0]->root)[opening];
  ts_subtree_retain(joined);
  for (uint32_t i = 1; i < count; i++) {
    Subtree next = ts_subtree_children(trees[i]->root)[statements_at(trees[i], false, i + 1 == count, UINT32_MAX)];
    ts_subtree_retain(next);
    SubtreeArray pair = array_new();
    array_push(&pair, joined);
    array_push(&pair, next);
    joined = ts_subtree_from_mut(ts_subtree_new_node(repeat, &pair, 0, language));
  }
  // The root as a whole parse builds it: the opening comments, the statements, the
  // closing comments and the end of input.
  SubtreeArray children = array_new();
  const Subtree *first = ts_subtree_children(trees[0]->root);
  for (uint32_t i = 0; i < opening; i++) {
    ts_subtree_retain(first[i]);
    array_push(&children, first[i]);
  }
  array_push(&children, joined);
  const TSTree *end = trees[count - 1];
  const Subtree *last = ts_subtree_children(end->root);
  for (uint32_t i = closing + 1; i < ts_subtree_child_count(end->root); i++) {
    ts_subtree_retain(last[i]);
    array_push(&children, last[i]);
  }
  Subtree root = ts_subtree_from_mut(ts_subtree_new_node(ts_subtree_symbol(trees[0]->root), &children, 0, language));
  return ts_tree_new(root, language, trees[0]->included_ranges, trees[0]->included_range_count);
}
