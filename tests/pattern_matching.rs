//! The engine runs the rules' queries with its own matcher (`engine::pattern`). Here it
//! must find exactly what tree-sitter's query cursor finds for every rule's query, over
//! every Python file in the repository and cases written to probe the query language's
//! corners (anchors next to comments, nested and repeated children, broken code); and it
//! must refuse what it does not understand rather than match something else.

mod common;

use common::repo;

use oomlint::engine::pattern::{Matches, PatternSet};
use oomlint::engine::{language, parse};
use oomlint::rules::RULES;
use std::collections::BTreeSet;
use streaming_iterator::StreamingIterator;
use tree_sitter::{Query, QueryCursor, Tree};

/// One match: its pattern and its captures as (name, start, end), sorted.
type Found = (usize, Vec<(String, usize, usize)>);

fn by_tree_sitter(query: &Query, tree: &Tree, source: &str) -> BTreeSet<Found> {
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), source.as_bytes());
    let mut found = BTreeSet::new();
    while let Some(m) = matches.next() {
        let mut captures: Vec<_> = m
            .captures()
            .iter()
            .map(|c| (query.capture_names()[c.index as usize].to_string(), c.node.start_byte(), c.node.end_byte()))
            .collect();
        captures.sort();
        found.insert((m.pattern_index, captures));
    }
    found
}

fn by_oomlint(patterns: &PatternSet, tree: &Tree, source: &str) -> BTreeSet<Found> {
    let matches = Matches { patterns, ranges: None, max_start_depth: u32::MAX, gather_parents: false };
    let mut found = BTreeSet::new();
    matches.for_each(tree.root_node(), source, &[true], &mut |pattern, captures, _| {
        let mut captures: Vec<_> = captures
            .iter()
            .map(|(c, node)| (patterns.capture_names()[*c as usize].clone(), node.start_byte(), node.end_byte()))
            .collect();
        captures.sort();
        found.insert((pattern, captures));
    });
    found
}

/// Cases our own files may not hold: where the query language's corners show.
const CORNERS: &[&str] = &[
    "f(\n    # the input\n    x,\n)\nmodel(  # comment\n    batch)\n",
    "losses.append(loss)\nlosses.append(loss, extra)\nlosses.append()\nlosses.append(# c\n loss)\n",
    "total = total + loss\ntotal = other + loss\ntotal += [loss]\nself.total += loss.item()\nx[i] = loss\n",
    "for step in range(10):\n    out = model(x)\n    h = rnn(x, h)\n    torch.cuda.empty_cache()\n    empty_cache()\n",
    "os.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True'\nos.environ.setdefault('A', 'b')\nos.putenv('A', 'b', 'c')\n",
    "loss.backward(retain_graph=True)\nloss.backward(x, retain_graph=True, create_graph=True)\nf(retain_graph=False)\n",
    "checkpoint(lambda x: f(x), y)\ncheckpoint_sequential(fns, 2, x)\ntorch.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)\n",
    "try:\n    f()\nexcept torch.OutOfMemoryError:\n    f()\nexcept (RuntimeError, ValueError) as e:\n    pass\n",
    "@torch.cuda.amp.custom_fwd\ndef f(x):\n    with autocast():\n        return x\nscaler = GradScaler()\namp_ctx = autocast\n",
    "torch.load(path)\nload(path, map_location='cpu')\ntorch.load(f, weights_only=True)\n",
    "def broken(:\n    model(x\nlosses.append(loss\nf(a, b))\n",
    "x = f(g(h(i(j(k(1))))))\nmodel(model(model(x)))\na.b.c.d.e.f(x)(y)(z)\n",
    "print(*(a for a in b))\nreturn_value = lambda: model(x)\n[model(x) for x in xs]\n",
];

/// The corner cases and every Python file of the repository's fixtures and tests.
fn every_source() -> Vec<(String, String)> {
    let mut sources: Vec<(String, String)> =
        CORNERS.iter().enumerate().map(|(i, s)| (format!("corner {i}"), s.to_string())).collect();
    let mut folders = vec![repo().join("fixtures"), repo().join("tests")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display())) {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "py") {
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                sources.push((path.display().to_string(), text));
            }
        }
    }
    sources
}

#[test]
fn every_rule_matches_what_tree_sitter_matches() {
    let sources = every_source();
    assert!(sources.len() > 100, "too few files to compare: {}", sources.len());
    let trees: Vec<Tree> = sources.iter().map(|(_, source)| parse(source).expect("parse")).collect();
    let mut compared = 0;
    for rule in RULES.iter().filter(|rule| !rule.query.trim().lines().all(|l| l.trim_start().starts_with(';'))) {
        let query = Query::new(&language(), rule.query).expect("tree-sitter compiles the query");
        let patterns = PatternSet::compile(&[(0, rule.query)]).unwrap_or_else(|(_, e)| panic!("{e}"));
        for ((name, source), tree) in sources.iter().zip(&trees) {
            let expected = by_tree_sitter(&query, tree, source);
            let found = by_oomlint(&patterns, tree, source);
            assert_eq!(found, expected, "{}: {name}", rule.code);
            compared += expected.len();
        }
    }
    assert!(compared > 1_000, "the rules matched too little to compare: {compared}");
}

/// The host predicates climb from a capture by the way the walk came down; the tree's
/// own ancestors must give every predicate the same answer.
#[test]
fn host_predicates_see_the_ancestors_the_tree_has() {
    let rules: Vec<(usize, &str)> = RULES.iter().enumerate().map(|(i, rule)| (i, rule.query)).collect();
    let patterns = PatternSet::compile(&rules).unwrap_or_else(|(_, e)| panic!("{e}"));
    let mut asked = 0;
    for (name, source) in every_source() {
        let tree = parse(&source).expect("parse");
        let _parents = oomlint::engine::tree::index_parents(tree.root_node());
        let matches = Matches { patterns: &patterns, ranges: None, max_start_depth: u32::MAX, gather_parents: false };
        matches.for_each(tree.root_node(), &source, &vec![true; RULES.len()], &mut |index, captures, ancestry| {
            for predicate in &patterns.pattern(index).host {
                for &(_, node) in captures.iter().filter(|(c, _)| *c == predicate.capture()) {
                    let walked = predicate.holds(ancestry.of(node), &source);
                    let climbed =
                        predicate.holds(oomlint::engine::tree::ancestors(node).map(|a| (a, a.kind_id())), &source);
                    assert_eq!(walked, climbed, "{name}: {}", &source[node.byte_range()]);
                    asked += 1;
                }
            }
        });
    }
    assert!(asked > 500, "too few host predicates asked: {asked}");
}

/// Each of `queries` finds something in `source`, and the same as tree-sitter's cursor.
fn each_matches_what_tree_sitter_matches(queries: &[&str], source: &str) {
    let tree = parse(source).expect("parse");
    for query in queries {
        let expected = by_tree_sitter(&Query::new(&language(), query).expect("tree-sitter compiles it"), &tree, source);
        let patterns = PatternSet::compile(&[(0, query)]).unwrap_or_else(|(_, e)| panic!("{e}"));
        assert!(!expected.is_empty(), "{query}");
        assert_eq!(by_oomlint(&patterns, &tree, source), expected, "{query}");
    }
}

/// A pattern is tried only at roots whose text holds what its predicates require of a
/// capture every match has: a capture inside an alternative may be missing from a match
/// (and then its predicate holds), a negated predicate requires nothing, and a required
/// text may overlap itself or end where the root ends.
#[test]
fn a_pattern_is_skipped_only_where_its_required_text_is_missing() {
    let queries = [
        "(call function: [(identifier) @name (attribute)] (#eq? @name \"foo\")) @call",
        "(call function: (attribute attribute: (identifier) @method) (#eq? @method \"append\")) @call",
        "((identifier) @name (#any-of? @name \"ab\" \"abab\"))",
        "((identifier) @name (#not-eq? @name \"ab\"))",
    ];
    let source = "foo()\nbar.baz()\nqux()\nxs.append(y)\nappended(x)\nabab = ab + aba\nf(a, # append\n b)\n";
    each_matches_what_tree_sitter_matches(&queries, source);
}

/// A pattern whose text predicate reads a capture of a child of the root in a field is
/// tried only where that child holds the text; a capture bound elsewhere too, or one of
/// two compared captures, decides nothing before the match, and a negated predicate
/// passes the children it does not name.
#[test]
fn a_pattern_is_skipped_only_where_its_childs_text_fails_the_predicate() {
    let queries = [
        "(call function: [(identifier) (attribute)] @callee (#match? @callee \"(?i)net$\")) @call",
        "(call function: [(identifier) (attribute)] @callee (#not-match? @callee \"^print$\")) @call",
        "(call function: (_) @callee (#any-of? @callee \"f\" \"a.b\")) @call",
        "(call function: (identifier) @callee (#not-eq? @callee \"f\")) @call",
        "(call function: (identifier) @name arguments: (argument_list (identifier) @name) (#eq? @name \"x\")) @call",
        "(assignment left: (identifier) @left right: (identifier) @right (#eq? @left @right)) @same",
    ];
    let source = "Net(x)\nself.encoder_net(x)\nprint(net)\nf(1)\na.b(2)\nx(x)\ny(x)\nx = x\nx = y\n";
    each_matches_what_tree_sitter_matches(&queries, source);
}

#[test]
fn what_the_matcher_does_not_understand_is_an_error() {
    for query in [
        "(call @x",
        "(call (identifier)* @x)",
        "(call !arguments)",
        "((identifier) (identifier))",
        "(_ (identifier) @x)",
        "(no_such_kind) @x",
        "(call nosuchfield: (identifier))",
        "(call \"no such token\")",
        "((identifier) @x (#eq? @x))",
        "((identifier) @x (#match? @x \"(\"))",
    ] {
        assert!(PatternSet::compile(&[(0, query)]).is_err(), "{query} compiled");
    }
}

/// A walk limited to some ranges finds matches there alone, and meets the identifiers
/// there alone: it gives no list of every identifier, but walks over ranges that hold
/// every top-level statement (a whole lint's parts) meet, together, those a walk of the
/// whole file meets (the facts of each part look names up among them).
#[test]
fn walks_over_parts_of_a_file_meet_together_the_identifiers_of_the_whole() {
    let queries = [(0, "(call function: (identifier) @name) @call")];
    let patterns = PatternSet::compile(&queries).unwrap_or_else(|(_, e)| panic!("{e}"));
    let source = "def f(a):\n    return g(a)\n\n\ndef h(b):\n    return k(b)\n\n\nm(f, h)\n";
    let tree = parse(source).expect("parse");
    let second = source.find("def h").expect("h")..source.find("m(f").expect("m");
    let rest = [0..second.start, second.end..source.len()];
    let walk = |ranges: Option<&[std::ops::Range<usize>]>| {
        let matches = Matches { patterns: &patterns, ranges, max_start_depth: u32::MAX, gather_parents: false };
        let mut calls = Vec::new();
        let walked = matches.for_each(tree.root_node(), source, &[true], &mut |_, captures, _| {
            calls.extend(captures.iter().filter(|(c, _)| *c == 0).map(|(_, n)| &source[n.byte_range()]));
        });
        (calls, walked)
    };
    // Each identifier's text up to the end the walk gave with it: the node's own end.
    let text = |ids: &[(tree_sitter::Node, u32)]| {
        ids.iter()
            .map(|&(n, end)| {
                assert_eq!(n.end_byte(), end as usize);
                &source[n.start_byte()..end as usize]
            })
            .collect::<Vec<_>>()
    };
    let (all_calls, whole) = walk(None);
    assert_eq!(all_calls, ["g", "k", "m"]);
    let every_identifier = whole.every_identifier().expect("a whole walk gives every identifier");
    let (calls, part) = walk(Some(std::slice::from_ref(&second)));
    assert_eq!(calls, ["k"]);
    assert!(part.whole);
    assert_eq!(text(&part.identifiers), ["h", "b", "k", "b"]);
    let (calls, other) = walk(Some(&rest));
    assert_eq!(calls, ["g", "m"]);
    let mut together: Vec<_> = part.identifiers.iter().chain(&other.identifiers).copied().collect();
    together.sort_by_key(|(n, _)| n.start_byte());
    assert_eq!(text(&together), text(&every_identifier));
    assert!(part.every_identifier().is_none(), "a part's identifiers are not all of the tree's");
}
