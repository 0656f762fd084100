// A node's visible children, with the field each holds, in one pass over the subtrees
// below it.
//
// tree-sitter's own API answers "child i" and "the field of child i" each by iterating
// from the first child, and its cursor pays for a stack of entries at every step: listing
// the children of every node of a file that way costs a quarter of what parsing the file
// costs. Here the children are read from the parsed subtrees themselves, through the
// library's internal headers (those of the tree-sitter crate the build links, so that
// their layout is the one compiled): a hidden child (a rule the grammar does not show)
// is looked through to its visible children, an alias gives a child its shown kind, and
// a child's field is the one its parent's production gives it, else the one given to the
// hidden node it lies in, as tree-sitter's cursor answers.

#include "tree_sitter/api.h"
#include "./language.h"
#include "./subtree.h"
#include "./tree.h"

// One listed child: laid out as oomlint's `Child` (a node, its field id or 0, its kind as
// `ts_node_symbol` answers, where it ends).
typedef struct {
  TSNode node;
  TSFieldId field;
  TSSymbol kind;
  uint32_t end;
} OomlintChild;

typedef struct {
  const TSTree *tree;
  OomlintChild *out;
  uint32_t capacity;
  uint32_t count;
  bool tokens;
} Listing;

// The field `map` gives the child at `structural_index`, or 0.
static TSFieldId field_at(const TSFieldMapEntry *map, const TSFieldMapEntry *end, uint32_t structural_index) {
  for (; map < end; map++) {
    if (!map->inherited && map->child_index == structural_index) return map->field_id;
  }
  return 0;
}

// List the visible children of `parent` (starting at `position`), those of hidden ones in
// their place; `inherited`: the field of `parent` itself when it is a hidden node.
static void list_subtree(Listing *listing, Subtree parent, Length position, TSFieldId inherited) {
  const TSLanguage *language = listing->tree->language;
  uint32_t production = parent.ptr->production_id;
  const TSSymbol *aliases = ts_language_alias_sequence(language, production);
  const TSFieldMapEntry *map = NULL, *map_end = NULL;
  ts_language_field_map(language, production, &map, &map_end);
  const Subtree *children = ts_subtree_children(parent);
  uint32_t count = parent.ptr->child_count;
  uint32_t structural_index = 0;
  for (uint32_t i = 0; i < count; i++) {
    const Subtree *child = &children[i];
    // Most leaves are stored inline, in the parent's list: each of their attributes is
    // read from one place or the other, so the test is made once per child.
    bool is_inline = child->data.is_inline;
    bool extra, visible, named;
    TSSymbol symbol;
    Length padding, size;
    uint32_t grandchildren;
    if (is_inline) {
      extra = child->data.extra;
      visible = child->data.visible;
      named = child->data.named;
      symbol = child->data.symbol;
      padding = (Length){child->data.padding_bytes, {child->data.padding_rows, child->data.padding_columns}};
      size = (Length){child->data.size_bytes, {0, child->data.size_bytes}};
      grandchildren = 0;
    } else {
      const SubtreeHeapData *data = child->ptr;
      extra = data->extra;
      visible = data->visible;
      named = data->named;
      symbol = data->symbol;
      padding = data->padding;
      size = data->size;
      grandchildren = data->child_count;
    }
    TSSymbol alias = 0;
    TSFieldId field = 0;
    if (!extra) {
      if (aliases) alias = aliases[structural_index];
      if (map != map_end) field = field_at(map, map_end, structural_index);
      if (!field) field = inherited;
      structural_index++;
    }
    // The first child starts where its parent does; the padding before it is the parent's.
    if (i > 0) position = length_add(position, padding);
    if (visible || alias) {
      if (alias) named = ts_language_symbol_metadata(language, alias).named;
      bool wanted = listing->tokens || named || (grandchildren > 0 && child->ptr->visible_child_count > 0);
      if (wanted) {
        if (listing->count < listing->capacity) {
          OomlintChild *at = &listing->out[listing->count];
          at->node = (TSNode){
            {position.bytes, position.extent.row, position.extent.column, alias},
            child,
            listing->tree,
          };
          at->field = field;
          at->kind = ts_language_public_symbol(language, alias ? alias : symbol);
          at->end = position.bytes + size.bytes;
        }
        listing->count++;
      }
    } else if (grandchildren > 0) {
      list_subtree(listing, *child, position, field);
    }
    position = length_add(position, size);
  }
}

// Write up to `capacity` visible children of `node` to `out`, in order, each with its kind
// and its field (or 0), anonymous leaves (punctuation, operators, keywords) only when
// `tokens`. Returns how many there are, which may be more than `capacity`.
uint32_t oomlint_list_children(TSNode node, bool tokens, OomlintChild *out, uint32_t capacity) {
  Subtree subtree = *(const Subtree *)node.id;
  if (ts_subtree_child_count(subtree) == 0) return 0;
  Listing listing = {node.tree, out, capacity, 0, tokens};
  Length start = {node.context[0], {node.context[1], node.context[2]}};
  list_subtree(&listing, subtree, start, 0);
  return listing.count;
}
