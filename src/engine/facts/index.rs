//! Name bindings and call sites, found by name on demand rather than by walking the whole
//! tree: a query for `loss` looks at the identifiers spelled `loss` and classifies each as
//! a binding or a use. They are those the rules' matcher met when its walk went into the
//! whole tree, else located by a text search and mapped to tree nodes (a relint of a few
//! statements walks only those). The cost is proportional to the names the rules ask
//! about, not to the file's size.

use crate::engine::field;
use crate::engine::tree::{self, KindName, is_scope};
use foldhash::HashMap;
use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;
use tree_sitter::Node;

/// The identifiers `len` bytes long that start at `positions` (sorted), in document order,
/// among the root's children `statements`.
/// One walk from the root that enters only the nodes holding some position, so the paths
/// to neighbouring positions are walked once: looking each up from the root instead costs
/// the tree's depth per position, and a long `a + b + ...` chain or a module of many
/// statements makes that grow with the square of the file.
/// The nodes of `sorted` (in document order) that start inside `range`.
fn starting_in<'a, 't>(sorted: &'a [Node<'t>], range: Range<usize>) -> &'a [Node<'t>] {
    let first = sorted.partition_point(|n| n.start_byte() < range.start);
    let last = first + sorted[first..].partition_point(|n| n.start_byte() < range.end);
    &sorted[first..last]
}

fn identifiers_at<'t>(statements: &[Node<'t>], positions: &[usize], len: usize) -> Vec<Node<'t>> {
    let mut found = Vec::new();
    // Nodes still to enter, each with the range of `positions` inside it. The root's
    // children (`statements`) are found by offset: stepping through them from the first
    // for every function of a long script asked about makes that grow with its square.
    let mut pending = Vec::new();
    let mut lo = 0;
    while lo < positions.len() {
        let Some(&statement) = statements.get(statements.partition_point(|s| s.end_byte() <= positions[lo])) else {
            break;
        };
        let start = lo + positions[lo..].partition_point(|&p| p < statement.start_byte());
        let end = start + positions[start..].partition_point(|&p| p < statement.end_byte());
        if start < end {
            pending.push((statement, start, end));
        }
        lo = end;
    }
    while let Some((node, lo, hi)) = pending.pop() {
        if node.kind_name() == "identifier" {
            if node.byte_range().len() == len && positions[lo..hi].contains(&node.start_byte()) {
                found.push(node);
            }
            continue;
        }
        let mut cursor = node.walk();
        if !cursor.goto_first_child() {
            continue;
        }
        let mut next = lo;
        loop {
            let child = cursor.node();
            // Searched, not stepped through: in a deep chain one child holds nearly all.
            let start = next + positions[next..hi].partition_point(|&p| p < child.start_byte());
            next = start + positions[start..hi].partition_point(|&p| p < child.end_byte());
            if start < next {
                pending.push((child, start, next));
            }
            if next == hi || !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    found.sort_by_key(|n| n.start_byte());
    found
}

/// A file's identifiers by spelling: each spelling's identifiers, in document order, lie
/// together in one list, rather than in a list per spelling grown an identifier at a time
/// (a file has thousands of identifiers and hundreds of spellings). Hashed with foldhash
/// rather than SipHash: every identifier of the file is hashed into it, and names are
/// short.
struct Spellings<'t> {
    /// Each spelling's number, in the order first met.
    numbers: HashMap<Spelling<'t>, u32>,
    /// By number: where the spelling's identifiers lie in `identifiers`.
    places: Vec<Range<u32>>,
    identifiers: Vec<Node<'t>>,
}

/// A name as a key of `Spellings`: hashed from its length and a few loads of its bytes
/// (its first and last eight, or four, or three single bytes of a shorter one), where a
/// `str` feeds the hasher its bytes and then a terminator. Every identifier of a file is
/// hashed into the table, and most names are short; names alike in the bytes read are
/// told apart by comparing them.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Spelling<'t>(&'t str);

impl std::hash::Hash for Spelling<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let bytes = self.0.as_bytes();
        let n = bytes.len();
        let eight = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"));
        let four = |at: usize| u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes")));
        let (first, last) = match n {
            8.. => (eight(0), eight(n - 8)),
            4..8 => (four(0) | four(n - 4) << 32, 0),
            1..4 => (u64::from(bytes[0]) | u64::from(bytes[n / 2]) << 8 | u64::from(bytes[n - 1]) << 16, 0),
            0 => (0, 0),
        };
        state.write_u64(first ^ (n as u64).rotate_right(8));
        state.write_u64(last);
    }
}

impl<'t> Spellings<'t> {
    /// The identifiers spelled `name`, in document order.
    fn get(&self, name: &str) -> &[Node<'t>] {
        self.numbers.get(&Spelling(name)).map_or(&[], |&number| self.of(number))
    }

    fn of(&self, number: u32) -> &[Node<'t>] {
        let at = &self.places[number as usize];
        &self.identifiers[at.start as usize..at.end as usize]
    }

    fn contains(&self, name: &str) -> bool {
        self.numbers.contains_key(&Spelling(name))
    }

    /// Each spelling with its identifiers.
    fn iter(&self) -> impl Iterator<Item = (&'t str, &[Node<'t>])> + '_ {
        self.numbers.iter().map(|(name, &number)| (name.0, self.of(number)))
    }
}

/// Every identifier of a tree, in document order, gathered by a walk of all of it (the
/// rules' matcher's), and the same by spelling, built on first use. A lint split in parts
/// shares one: each part's facts look names up all over the file, and the table is built
/// once for all of them, not once per part.
pub struct WalkedIdentifiers<'t> {
    /// Each with where it ends.
    identifiers: Vec<(Node<'t>, u32)>,
    by_spelling: std::sync::OnceLock<Spellings<'t>>,
}

impl<'t> WalkedIdentifiers<'t> {
    pub fn new(identifiers: Vec<(Node<'t>, u32)>) -> WalkedIdentifiers<'t> {
        WalkedIdentifiers { identifiers, by_spelling: std::sync::OnceLock::new() }
    }

    fn by_spelling(&self, source: &'t str) -> &Spellings<'t> {
        self.by_spelling.get_or_init(|| by_spelling(&self.identifiers, source))
    }
}

/// One name's identifiers in each top-level statement asked about, by the statement's
/// index among the root's children.
type ByStatement<'t> = HashMap<usize, Rc<[Node<'t>]>>;

/// Identifies a scope: the function, lambda or class node, or the module root.
pub type ScopeId = usize;

/// The bindings of one name made directly in one scope.
type ScopeBindings<'t> = Rc<[Binding<'t>]>;

/// One name's bindings, by the scope each is made in.
#[derive(Default)]
struct BindingsByScope<'t> {
    by_scope: HashMap<ScopeId, Vec<Binding<'t>>>,
    /// The function, lambda and class nodes among those scopes (the module left out).
    scopes: Vec<Node<'t>>,
}

/// How many scopes around a name a lookup climbs before it turns to the scopes that bind
/// the name instead: generated code nests thousands of lambdas, and climbing through all
/// of them for each name inside makes a file's time grow with the square of its depth.
const CLIMBED_SCOPES: usize = 32;

/// Past this many occurrences of a name inside a function, lambda or class, its bindings
/// there are taken from the file's bindings of the name (classified once) rather than
/// classified there: in deeply nested code each occurrence lies inside thousands of
/// scopes, and classifying it again for each makes that grow with the square of the depth.
const LOCAL_OCCURRENCES: usize = 256;

#[derive(Debug, Clone, Copy)]
pub enum BindingKind<'t> {
    /// `name = value` (also `name := value`).
    Value(Node<'t>),
    /// `a, name = value`: one of several targets of one value.
    Unpacked(Node<'t>),
    /// `name op= value`.
    Augmented(Node<'t>),
    /// `import a.b as name`, `from a import b as name`: see `Binding::import_path`.
    Import,
    Parameter,
    /// `def name` / `class name`.
    Definition,
    /// `for name in iterable`.
    LoopTarget(Node<'t>),
    /// `with ... as name`, `except ... as name` and other bindings not modelled.
    Other,
}

#[derive(Debug, Clone)]
pub struct Binding<'t> {
    pub kind: BindingKind<'t>,
    pub scope: ScopeId,
    /// The statement that binds (the assignment, the loop, the import, the `def` ...).
    pub statement: Node<'t>,
    /// From this byte on the binding is in force.
    pub visible_from: usize,
    /// For imports, the dotted path the name stands for.
    pub import_path: Option<String>,
}

pub struct FileIndex<'t> {
    root: Node<'t>,
    source: &'t str,
    /// Start offsets of each word asked about in the text (identifiers, and words in
    /// strings and comments, which are filtered out when mapped to nodes), found by a
    /// search of the text per word on first use: a relint of a few statements asks about
    /// a few dozen names, and a table of every word of a long file cost more than
    /// searching for those.
    words: RefCell<HashMap<String, Rc<[usize]>>>,
    /// Every identifier of the tree, when the rules' matcher walked all of it (see
    /// `with_identifiers`): a name's occurrences are then read from them by spelling
    /// instead of found through `words` and a descent to each.
    walked: Option<std::sync::Arc<WalkedIdentifiers<'t>>>,
    occurrences: RefCell<HashMap<String, Rc<[Node<'t>]>>>,
    /// A name's identifiers in one top-level statement, found on first use: a relint
    /// asks about names of the few statements it relints (`eval`, `step`, `backward` in
    /// one function), which a long script uses in every function, and finding every
    /// occurrence in the file, to slice those of one function, descended to hundreds
    /// of nodes.
    by_statement: RefCell<HashMap<String, ByStatement<'t>>>,
    bindings: RefCell<HashMap<String, Rc<[Binding<'t>]>>>,
    /// The bindings of a name made directly in one scope, per (scope, name). Each is
    /// classified from the occurrences inside that scope alone (the module's: outside
    /// every top-level definition's body), so that a lookup costs what the scope holds,
    /// not every use of the name in the file: relinting one function of a long script
    /// looks up `model` and `print` without classifying each function's.
    scoped: RefCell<HashMap<(ScopeId, String), ScopeBindings<'t>>>,
    /// The bodies of the top-level functions and classes, in order: names used inside
    /// them are not bound in the module's scope.
    definition_bodies: std::cell::OnceCell<Vec<Range<usize>>>,
    /// The root's children, in order.
    statements: std::cell::OnceCell<Vec<Node<'t>>>,
    /// One name's bindings in the whole file, by the scope each is made in: for the
    /// scopes that hold too many of the name's occurrences to classify them there.
    grouped: RefCell<HashMap<String, Rc<BindingsByScope<'t>>>>,
    /// Start offsets of literal texts a rule looks for, found once per text: a rule that
    /// asks for each call whether the text before it holds one would otherwise search
    /// the file once per call.
    texts: RefCell<HashMap<&'static str, Rc<[usize]>>>,
}

impl<'t> FileIndex<'t> {
    pub fn new(root: Node<'t>, source: &'t str) -> FileIndex<'t> {
        FileIndex {
            root,
            source,
            words: RefCell::default(),
            walked: None,
            occurrences: RefCell::default(),
            by_statement: RefCell::default(),
            bindings: RefCell::default(),
            scoped: RefCell::default(),
            definition_bodies: std::cell::OnceCell::new(),
            statements: std::cell::OnceCell::new(),
            grouped: RefCell::default(),
            texts: RefCell::default(),
        }
    }

    /// Look names up among `identifiers`, every identifier of the tree (a walk of the
    /// whole tree gathered them).
    pub fn with_identifiers(mut self, identifiers: std::sync::Arc<WalkedIdentifiers<'t>>) -> FileIndex<'t> {
        self.walked = Some(identifiers);
        self
    }

    /// The walked identifiers by spelling, when the index was given them.
    fn named(&self) -> Option<&Spellings<'t>> {
        Some(self.walked.as_ref()?.by_spelling(self.source))
    }

    /// Each spelling `wanted` accepts with its identifiers, in no particular order, when
    /// the walk gathered the file's identifiers (else `None`): each spelling is asked
    /// once, and what the caller asks of a spelling is asked once too.
    pub fn identifiers_spelled(&self, wanted: impl Fn(&str) -> bool) -> Option<Vec<(&'t str, &[Node<'t>])>> {
        Some(self.named()?.iter().filter(|(name, _)| wanted(name)).collect())
    }

    /// Where the first of `texts` starts inside `range` (anywhere: code, strings,
    /// comments), if one does.
    pub fn first_text_in(&self, texts: &[&'static str], range: Range<usize>) -> Option<usize> {
        texts
            .iter()
            .filter_map(|text| {
                let mut known = self.texts.borrow_mut();
                // Where `str::match_indices` finds it (matches that do not overlap), by a
                // vectorised search: asked in large functions of large files.
                let offsets = known
                    .entry(text)
                    .or_insert_with(|| memchr::memmem::find_iter(self.source.as_bytes(), text.as_bytes()).collect());
                let first = offsets.partition_point(|&at| at < range.start);
                offsets.get(first).copied().filter(|&at| at + text.len() <= range.end)
            })
            .min()
    }

    /// Every identifier spelled `name` (attribute names included), in document order.
    pub fn occurrences(&self, name: &str) -> Rc<[Node<'t>]> {
        if let Some(known) = self.occurrences.borrow().get(name) {
            return known.clone();
        }
        let found: Rc<[Node<'t>]> = match self.named() {
            Some(named) => named.get(name).into(),
            None => identifiers_at(self.statements(), &self.word_places(name), name.len()).into(),
        };
        self.occurrences.borrow_mut().insert(name.to_string(), found.clone());
        found
    }

    /// The identifiers spelled `name` inside `range`: a slice of the name's occurrences
    /// when the file's are known, else found from the word index without touching the
    /// rest of the tree (mapping an offset to a node descends from the root, so the
    /// fewer offsets the better), in each top-level statement `range` reaches once.
    pub fn occurrences_in(&self, name: &str, range: Range<usize>) -> Vec<Node<'t>> {
        if let Some(all) = self.occurrences.borrow().get(name) {
            return starting_in(all, range).to_vec();
        }
        if let Some(named) = self.named() {
            return starting_in(named.get(name), range).to_vec();
        }
        let positions = self.positions_in(name, range.clone());
        if positions.len() == self.word_places(name).len() {
            return self.occurrences(name).to_vec();
        }
        let statements = self.statements();
        let mut found = Vec::new();
        let mut lo = 0;
        while lo < positions.len() {
            let at = statements.partition_point(|s| s.end_byte() <= positions[lo]);
            let Some(statement) = statements.get(at) else { break };
            let end = lo + positions[lo..].partition_point(|&p| p < statement.end_byte());
            if positions[lo..end].iter().any(|&p| p >= statement.start_byte()) {
                found.extend_from_slice(starting_in(&self.occurrences_in_statement(name, at), range.clone()));
            }
            lo = end;
        }
        found
    }

    /// The identifiers spelled `name` in the top-level statement `at` (an index into
    /// `statements`), found once.
    fn occurrences_in_statement(&self, name: &str, at: usize) -> Rc<[Node<'t>]> {
        if let Some(known) = self.by_statement.borrow().get(name).and_then(|found| found.get(&at)) {
            return known.clone();
        }
        let statement = &self.statements()[at..=at];
        let positions = self.positions_in(name, statement[0].byte_range());
        let found: Rc<[Node<'t>]> = identifiers_at(statement, &positions, name.len()).into();
        self.by_statement.borrow_mut().entry(name.to_string()).or_default().insert(at, found.clone());
        found
    }

    /// Where the word `name` starts inside `range` (code, strings and comments alike).
    fn positions_in(&self, name: &str, range: Range<usize>) -> Vec<usize> {
        let positions = self.word_places(name);
        let first = positions.partition_point(|&p| p < range.start);
        let last = positions.partition_point(|&p| p < range.end);
        positions[first..last].to_vec()
    }

    /// Where the word `name` starts anywhere in the text, found once per name.
    fn word_places(&self, name: &str) -> Rc<[usize]> {
        if let Some(known) = self.words.borrow().get(name) {
            return known.clone();
        }
        let found: Rc<[usize]> = word_places(self.source, name).into();
        self.words.borrow_mut().insert(name.to_string(), found.clone());
        found
    }

    /// How many times `name` occurs inside `range`: as an identifier when the walked
    /// identifiers are known, else as a word (in strings and comments too).
    fn count_in(&self, name: &str, range: Range<usize>) -> usize {
        match self.named() {
            Some(named) => starting_in(named.get(name), range).len(),
            None => self.positions_in(name, range).len(),
        }
    }

    /// Whether `name` occurs in the file at all (as an identifier when the walked
    /// identifiers are known, else as a word).
    fn occurs(&self, name: &str) -> bool {
        match self.named() {
            Some(named) => named.contains(name),
            None => !self.word_places(name).is_empty(),
        }
    }

    fn statements(&self) -> &[Node<'t>] {
        self.statements.get_or_init(|| {
            let mut cursor = self.root.walk();
            self.root.children(&mut cursor).collect()
        })
    }

    /// Calls made through `name` (`name(...)` and `x.name(...)`) inside `range`, in
    /// document order. Rules ask this per finding about the same few names (`eval`,
    /// `train`, `backward`) over nested ranges: the occurrences of each top-level
    /// statement are found once (`occurrences_in`) and sliced.
    pub fn calls_named_in(&self, name: &str, range: Range<usize>) -> Vec<Node<'t>> {
        self.occurrences_in(name, range.clone())
            .into_iter()
            .filter_map(call_through)
            .filter(|call| range.start <= call.start_byte() && call.end_byte() <= range.end)
            .collect()
    }

    /// The `for` and `while` statements inside `scope` (nested functions' included), in
    /// document order, each found from its keyword in the text by one descent from
    /// `scope`: a long `main()` has tens of thousands of nodes and a few loops.
    pub fn loops_in(&self, scope: Node<'t>) -> Vec<Node<'t>> {
        let range = scope.byte_range();
        let mut keywords = self.positions_in("for", range.clone());
        keywords.extend(self.positions_in("while", range));
        keywords.sort_unstable();
        let mut loops: Vec<Node<'t>> = Vec::new();
        for at in keywords {
            // The smallest named node around a statement's keyword is the statement; around
            // a comprehension's, a string's or a comment's, something else.
            let Some(found) = scope.named_descendant_for_byte_range(at, at + 1) else { continue };
            if tree::is_loop(found.kind_name()) && loops.last().is_none_or(|last| last.id() != found.id()) {
                loops.push(found);
            }
        }
        loops
    }

    /// Every binding of `name` in the file, sorted by where it takes effect.
    pub fn bindings(&self, name: &str) -> Rc<[Binding<'t>]> {
        if let Some(known) = self.bindings.borrow().get(name) {
            return known.clone();
        }
        let found: Rc<[Binding<'t>]> = self.classify_all(self.occurrences(name).iter().copied()).into();
        self.bindings.borrow_mut().insert(name.to_string(), found.clone());
        found
    }

    fn classify_all(&self, identifiers: impl Iterator<Item = Node<'t>>) -> Vec<Binding<'t>> {
        let mut found: Vec<Binding<'t>> = identifiers.filter_map(|identifier| self.classify(identifier)).collect();
        found.sort_by_key(|b| b.visible_from);
        found
    }

    /// Bindings of `name` made directly in `scope` (a function, lambda or class node, or
    /// the root), sorted by where they take effect. A binding lies inside the scope it
    /// is made in, and one made in the module outside every top-level definition's body
    /// (a definition's own name is in its header), so only those occurrences are
    /// classified: the same names are looked up from many places, and a lookup climbs
    /// the scope chain to the module for most names.
    pub fn bindings_in(&self, scope: Node<'t>, name: &str) -> Vec<Binding<'t>> {
        let key = (scope.id(), name.to_string());
        if let Some(known) = self.scoped.borrow().get(&key) {
            return known.to_vec();
        }
        let candidates = if scope.id() == self.root.id() {
            self.module_level_occurrences(name)
        } else if self.count_in(name, scope.byte_range()) > LOCAL_OCCURRENCES {
            let found: ScopeBindings<'t> =
                self.grouped_bindings(name).by_scope.get(&scope.id()).cloned().unwrap_or_default().into();
            self.scoped.borrow_mut().insert(key, found.clone());
            return found.to_vec();
        } else {
            self.occurrences_in(name, scope.byte_range())
        };
        let found = self.classify_all(candidates.into_iter());
        let found: Rc<[Binding<'t>]> = found.into_iter().filter(|b| b.scope == scope.id()).collect();
        self.scoped.borrow_mut().insert(key, found.clone());
        found.to_vec()
    }

    /// The identifiers spelled `name` outside the bodies of top-level functions and
    /// classes.
    fn module_level_occurrences(&self, name: &str) -> Vec<Node<'t>> {
        let bodies = self.definition_bodies.get_or_init(|| {
            let mut cursor = self.root.walk();
            self.root
                .named_children(&mut cursor)
                .filter_map(|unit| match unit.kind_name() {
                    "decorated_definition" => unit.child_by_field_id(field::DEFINITION),
                    "function_definition" | "class_definition" => Some(unit),
                    _ => None,
                })
                .filter_map(|definition| definition.child_by_field_id(field::BODY))
                .map(|body| body.byte_range())
                .collect()
        });
        let outside_bodies = |at: &usize| {
            let next = bodies.partition_point(|body| body.end <= *at);
            bodies.get(next).is_none_or(|body| *at < body.start)
        };
        if let Some(named) = self.named() {
            return named.get(name).iter().copied().filter(|n| outside_bodies(&n.start_byte())).collect();
        }
        let positions: Vec<usize> = self.word_places(name).iter().copied().filter(outside_bodies).collect();
        identifiers_at(self.statements(), &positions, name.len())
    }

    /// Scopes whose bindings `node` can see, innermost first (class bodies are not
    /// visible from the functions inside them, as in Python), the module last.
    /// Yielded lazily: a lookup stops at the first scope that binds the name, and in
    /// deeply nested code the whole chain is long.
    pub fn scope_chain(&self, node: Node<'t>) -> impl Iterator<Item = Node<'t>> + use<'t> {
        let mut seen_scope = false;
        tree::ancestors(node)
            .filter(move |ancestor| {
                let kind = ancestor.kind_name();
                let visible = is_scope(kind) && (kind != "class_definition" || !seen_scope);
                seen_scope |= visible;
                visible
            })
            .chain(std::iter::once(self.root))
    }

    /// The file's bindings of `name`, by scope (classified once for the whole file).
    fn grouped_bindings(&self, name: &str) -> Rc<BindingsByScope<'t>> {
        if let Some(known) = self.grouped.borrow().get(name) {
            return known.clone();
        }
        let mut grouped = BindingsByScope::default();
        for binding in self.bindings(name).iter() {
            let group = grouped.by_scope.entry(binding.scope).or_default();
            if group.is_empty() && binding.scope != self.root.id() {
                let scope = std::iter::once(binding.statement)
                    .chain(tree::ancestors(binding.statement))
                    .find(|node| node.id() == binding.scope);
                grouped.scopes.extend(scope);
            }
            group.push(binding.clone());
        }
        let grouped = Rc::new(grouped);
        self.grouped.borrow_mut().insert(name.to_string(), grouped.clone());
        grouped
    }

    /// The binding of `name` in force at `node`: the last one made before it in the
    /// innermost scope that binds the name at all (a later one when none comes before,
    /// as for a name set further down a loop body).
    pub fn lookup(&self, name: &str, node: Node<'t>) -> Option<Binding<'t>> {
        if !self.occurs(name) {
            return None;
        }
        let at = node.start_byte();
        let in_force = |in_scope: &[Binding<'t>]| {
            let first = in_scope.first()?;
            Some(in_scope.iter().rev().find(|b| b.visible_from <= at).unwrap_or(first).clone())
        };
        let mut chain = self.scope_chain(node);
        for scope in chain.by_ref().take(CLIMBED_SCOPES) {
            let in_scope = self.bindings_in(scope, name);
            if !in_scope.is_empty() {
                return in_force(&in_scope);
            }
        }
        // Past the module (the chain's last scope) nothing binds it.
        chain.next()?;
        // Deeper than that: the innermost of the scopes binding the name that hold `node`
        // (a class body so far out is not visible), else the module.
        let grouped = self.grouped_bindings(name);
        let innermost = grouped
            .scopes
            .iter()
            .filter(|scope| scope.kind_name() != "class_definition" && tree::contains(**scope, node))
            .max_by_key(|scope| scope.start_byte());
        let scope = innermost.map_or(self.root.id(), |scope| scope.id());
        in_force(grouped.by_scope.get(&scope)?)
    }

    /// What binding, if any, this occurrence of a name makes.
    fn classify(&self, identifier: Node<'t>) -> Option<Binding<'t>> {
        let parent = tree::parent(identifier)?;
        let is_field =
            |node: Node<'t>, field: u16| node.child_by_field_id(field).is_some_and(|f| f.id() == identifier.id());
        let scope = |node: Node<'t>| scope_of(node, self.root);
        let make = |kind, statement: Node<'t>, visible_from| Binding {
            kind,
            scope: scope(identifier),
            statement,
            visible_from,
            import_path: None,
        };
        match parent.kind_name() {
            "assignment" if is_field(parent, field::LEFT) => {
                let value = innermost_assigned_value(parent.child_by_field_id(field::RIGHT)?);
                Some(make(BindingKind::Value(value), statement_of(parent), parent.end_byte()))
            }
            "augmented_assignment" if is_field(parent, field::LEFT) => {
                let value = parent.child_by_field_id(field::RIGHT)?;
                Some(make(BindingKind::Augmented(value), statement_of(parent), parent.end_byte()))
            }
            "named_expression" if is_field(parent, field::NAME) => {
                let value = parent.child_by_field_id(field::VALUE)?;
                Some(make(BindingKind::Value(value), parent, parent.end_byte()))
            }
            "for_statement" if is_field(parent, field::LEFT) => {
                let body = parent.child_by_field_id(field::BODY)?;
                Some(make(BindingKind::LoopTarget(parent.child_by_field_id(field::RIGHT)?), parent, body.start_byte()))
            }
            "function_definition" | "class_definition" if is_field(parent, field::NAME) => Some(Binding {
                kind: BindingKind::Definition,
                scope: scope(parent),
                statement: parent,
                visible_from: parent.start_byte(),
                import_path: None,
            }),
            "parameters" | "lambda_parameters" => self.parameter(parent),
            "default_parameter" | "typed_default_parameter" if is_field(parent, field::NAME) => {
                self.parameter(tree::parent(parent)?)
            }
            "typed_parameter" | "list_splat_pattern" | "dictionary_splat_pattern"
                if tree::parent(parent)
                    .is_some_and(|p| matches!(p.kind_name(), "parameters" | "lambda_parameters")) =>
            {
                self.parameter(tree::parent(parent)?)
            }
            "as_pattern_target" => Some(make(BindingKind::Other, parent, parent.end_byte())),
            kind if is_destructuring(kind) => {
                // Climb out of the destructuring pattern to what binds it.
                let mut target = parent;
                while let Some(up) = tree::parent(target) {
                    match up.kind_name() {
                        kind if is_destructuring(kind) => target = up,
                        "assignment" if up.child_by_field_id(field::LEFT).is_some_and(|l| l.id() == target.id()) => {
                            let value = innermost_assigned_value(up.child_by_field_id(field::RIGHT)?);
                            return Some(make(BindingKind::Unpacked(value), statement_of(up), up.end_byte()));
                        }
                        "for_statement" if up.child_by_field_id(field::LEFT).is_some_and(|l| l.id() == target.id()) => {
                            let body = up.child_by_field_id(field::BODY)?;
                            let iterable = up.child_by_field_id(field::RIGHT)?;
                            return Some(make(BindingKind::LoopTarget(iterable), up, body.start_byte()));
                        }
                        "as_pattern_target" => return Some(make(BindingKind::Other, up, up.end_byte())),
                        _ => return None,
                    }
                }
                None
            }
            "dotted_name" | "aliased_import" => self.import(identifier),
            _ => None,
        }
    }

    fn parameter(&self, parameters: Node<'t>) -> Option<Binding<'t>> {
        let function = tree::parent(parameters).filter(|f| tree::is_function(f.kind_name()))?;
        let body = function.child_by_field_id(field::BODY)?;
        Some(Binding {
            kind: BindingKind::Parameter,
            scope: function.id(),
            statement: function,
            visible_from: body.start_byte(),
            import_path: None,
        })
    }

    /// `import a.b` binds `a`; `import a.b as c` binds `c` to `a.b`; `from m import b as
    /// c` binds `c` (or `b`) to `m.b`.
    fn import(&self, identifier: Node<'t>) -> Option<Binding<'t>> {
        let statement = tree::ancestors(identifier).find(|a| a.kind_name().starts_with("import"))?;
        let text = |n: Node| tree::text(n, self.source);
        let module = statement.child_by_field_id(field::MODULE_NAME);
        if module.is_some_and(|m| tree::contains(m, identifier)) {
            return None;
        }
        let parent = tree::parent(identifier)?;
        let path = if parent.kind_name() == "aliased_import" {
            if parent.child_by_field_id(field::ALIAS).map(|a| a.id()) != Some(identifier.id()) {
                return None;
            }
            text(parent.child_by_field_id(field::NAME)?).to_string()
        } else {
            // A name inside a dotted name: only the first part of `import a.b` binds,
            // and only a plain (unaliased) `from m import b`.
            if tree::parent(parent).is_some_and(|p| p.kind_name() == "aliased_import") {
                return None;
            }
            match module {
                Some(_) => text(parent).to_string(),
                None if parent.named_child(0).map(|c| c.id()) == Some(identifier.id()) => text(identifier).to_string(),
                None => return None,
            }
        };
        let import_path = match module {
            Some(module) => format!("{}.{path}", text(module)),
            None => path,
        };
        Some(Binding {
            kind: BindingKind::Import,
            scope: scope_of(statement, self.root),
            statement,
            visible_from: statement.end_byte(),
            import_path: Some(import_path),
        })
    }
}

/// Where `name` starts as a whole word of `source`: a maximal run of identifier
/// characters spelled `name`, as a scan of every word of the text would list it.
pub(crate) fn word_places(source: &str, name: &str) -> Vec<usize> {
    let bytes = source.as_bytes();
    // A name is a run of identifier characters: a dotted path or an empty string is no
    // word of the text.
    if name.is_empty() || !name.bytes().all(is_word_byte) {
        return Vec::new();
    }
    memchr::memmem::find_iter(bytes, name.as_bytes())
        .filter(|&at| {
            !at.checked_sub(1).is_some_and(|before| is_word_byte(bytes[before]))
                && !bytes.get(at + name.len()).is_some_and(|&after| is_word_byte(after))
        })
        .collect()
}

/// `identifiers` by spelling, each list in document order. Only an identifier that is a
/// whole word of the text counts, as in `word_places`, so that a name's occurrences are
/// the same whichever way they are found.
///
/// An identifier's own bytes are not looked at: the grammar's identifier token is a run
/// of word characters (`[_\p{XID_Start}][_\p{XID_Continue}]*`, keywords used as names
/// included), and checking each byte of each one cost a quarter of building this.
fn by_spelling<'t>(identifiers: &[(Node<'t>, u32)], source: &'t str) -> Spellings<'t> {
    let bytes = source.as_bytes();
    let is_word = |b: &u8| is_word_byte(*b);
    // Most names recur: a file's spellings are a fifth to a third of its identifiers
    // (pytorch/examples, diffusers' examples), and a table sized for fewer is grown and
    // rehashed on the way.
    let mut numbers = HashMap::with_capacity_and_hasher(identifiers.len() / 4, Default::default());
    // Each identifier kept, with its spelling's number; how many each spelling has.
    let mut numbered: Vec<(u32, Node<'t>)> = Vec::with_capacity(identifiers.len());
    let mut counts: Vec<u32> = Vec::new();
    for &(identifier, end) in identifiers {
        // The end the walk read beside the node: read here from the subtree, a cache miss.
        let range = identifier.start_byte()..end as usize;
        debug_assert!(bytes[range.clone()].iter().all(is_word), "an identifier is a run of word characters");
        let whole_word = !range.is_empty()
            && !range.start.checked_sub(1).is_some_and(|before| is_word(&bytes[before]))
            && !bytes.get(range.end).is_some_and(is_word);
        if whole_word {
            let next = counts.len() as u32;
            let number = *numbers.entry(Spelling(&source[range])).or_insert(next);
            if number == next {
                counts.push(0);
            }
            counts[number as usize] += 1;
            numbered.push((number, identifier));
        }
    }
    // Each spelling's place in the one list, then its identifiers put there in order.
    let mut places = Vec::with_capacity(counts.len());
    let mut end = 0;
    for count in counts {
        places.push(end..end + count);
        end += count;
    }
    let mut next: Vec<u32> = places.iter().map(|place| place.start).collect();
    let mut listed = numbered.first().map_or_else(Vec::new, |&(_, first)| vec![first; numbered.len()]);
    for (number, identifier) in numbered {
        let at = &mut next[number as usize];
        listed[*at as usize] = identifier;
        *at += 1;
    }
    Spellings { numbers, places, identifiers: listed }
}

/// A byte of a word: an ASCII letter, digit or underscore, or part of a non-ASCII character.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// The scope a node's own binding lands in: the innermost function, lambda or class
/// around it (a `def`'s name lands outside the `def`).
fn scope_of(node: Node, root: Node) -> ScopeId {
    tree::ancestors(node).find(|a| is_scope(a.kind_name())).map_or(root.id(), |a| a.id())
}

/// `x.name(...)` or `name(...)` for an identifier spelled `name`.
fn call_through(identifier: Node) -> Option<Node> {
    let mut callee = identifier;
    let parent = tree::parent(identifier)?;
    if parent.kind_name() == "attribute" {
        if parent.child_by_field_id(field::ATTRIBUTE)?.id() != identifier.id() {
            return None;
        }
        callee = parent;
    }
    let call = tree::parent(callee).filter(|c| c.kind_name() == "call")?;
    (call.child_by_field_id(field::FUNCTION)?.id() == callee.id()).then_some(call)
}

fn statement_of(node: Node) -> Node {
    tree::parent(node).filter(|p| p.kind_name() == "expression_statement").unwrap_or(node)
}

/// `a = b = value` binds both names to `value`.
fn innermost_assigned_value(mut right: Node) -> Node {
    while right.kind_name() == "assignment" {
        match right.child_by_field_id(field::RIGHT) {
            Some(next) => right = next,
            None => break,
        }
    }
    right
}

/// Node kinds that group several assignment or loop targets (`a, (b, c)`, `[a, *b]`).
fn is_destructuring(kind: &str) -> bool {
    matches!(
        kind,
        "pattern_list"
            | "tuple_pattern"
            | "list_pattern"
            | "list_splat_pattern"
            | "expression_list"
            | "tuple"
            | "list"
            | "parenthesized_expression"
    )
}

/// The plain names bound by an assignment or loop target (`a`, `a, (b, c)`, `[a, *b]`).
pub fn target_names(target: Node) -> Vec<Node> {
    let mut names = Vec::new();
    let mut stack = vec![target];
    while let Some(node) = stack.pop() {
        match node.kind_name() {
            "identifier" => names.push(node),
            kind if is_destructuring(kind) => {
                let mut cursor = node.walk();
                stack.extend(node.named_children(&mut cursor));
            }
            _ => {}
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every maximal run of identifier characters, by spelling: what `word_places` must
    /// find for each.
    fn word_offsets(source: &str) -> HashMap<&str, Vec<usize>> {
        let mut words: HashMap<&str, Vec<usize>> = HashMap::default();
        let bytes = source.as_bytes();
        let is_word = is_word_byte;
        let mut i = 0;
        while i < bytes.len() {
            if !is_word(bytes[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && is_word(bytes[i]) {
                i += 1;
            }
            // Bytes >= 0x80 only ever form whole characters here, so the slice is valid UTF-8.
            words.entry(&source[start..i]).or_default().push(start);
        }
        words
    }
    use crate::engine::pattern::{Matches, PatternSet};

    /// Names in code, strings, comments and f-string interpolations, soft keywords used as
    /// names, names in nested scopes, and a name run into a character that is not part of
    /// it (`a€`: the words of the text and the identifiers of the tree differ there).
    const SOURCE: &str = "\
import torch as t
from m import model  # model in a comment
match = print
def train(model, loader):
    total = 0
    for x in loader:
        loss = model(x)  # loss
        total += loss
        label = f\"{loss} model\"
    def inner():
        model = lambda model: model
        return model
    return total
class Net:
    model = 'model'
    def forward(self, x):
        return self.model(x)
a€ = model
model = Net()
abcdefgh_1_ijklmnop = abcdefgh_2_ijklmnop
";

    fn walked<'t>(root: Node<'t>, ranges: Option<&[Range<usize>]>, depth: u32) -> Option<Vec<(Node<'t>, u32)>> {
        let patterns = PatternSet::compile(&[(0, "(call) @c")]).expect("compile");
        let matches = Matches { patterns: &patterns, ranges, max_start_depth: depth, gather_parents: false };
        matches.for_each(root, SOURCE, &[true], &mut |_, _, _| {}).every_identifier()
    }

    /// The index answers the same whether it reads names from the identifiers the
    /// matcher's walk gathered or finds them from the words of the text.
    #[test]
    fn a_words_places_are_where_a_scan_of_every_word_finds_it() {
        let source = "aa aaa a_a aa\n# aa in a comment: 'aa'\nx.aa(aa1, 1aa, aa)\n€aa aa€ é aa";
        let every = word_offsets(source);
        for (word, places) in &every {
            assert_eq!(&word_places(source, word), places, "{word}");
        }
        for absent in ["", "x.aa", "aa(", "b"] {
            assert!(word_places(source, absent).is_empty(), "{absent}");
        }
    }

    #[test]
    fn names_read_from_the_walk_are_those_found_from_the_words() {
        let tree = crate::engine::parse(SOURCE).expect("parse");
        let root = tree.root_node();
        let walked = walked(root, None, u32::MAX).expect("the walk went into every node");
        assert!(walked.iter().all(|&(n, end)| n.kind_name() == "identifier" && n.end_byte() == end as usize));
        let identifiers: Vec<Node> = walked.iter().map(|&(n, _)| n).collect();
        let from_words = FileIndex::new(root, SOURCE);
        let from_walk =
            FileIndex::new(root, SOURCE).with_identifiers(std::sync::Arc::new(WalkedIdentifiers::new(walked.clone())));
        let ids = |nodes: &[Node]| nodes.iter().map(|n| n.id()).collect::<Vec<_>>();
        let binding = |b: Option<Binding>| b.map(|b| (b.statement.id(), b.scope, b.visible_from));
        let mut names: Vec<&str> = word_offsets(SOURCE).into_keys().collect();
        names.sort_unstable();
        for name in names {
            assert_eq!(ids(&from_walk.occurrences(name)), ids(&from_words.occurrences(name)), "{name}");
            assert_eq!(
                ids(&from_walk.occurrences_in(name, 40..200)),
                ids(&from_words.occurrences_in(name, 40..200)),
                "{name}"
            );
            assert_eq!(from_walk.bindings_in(root, name).len(), from_words.bindings_in(root, name).len(), "{name}");
            for &at in &identifiers {
                assert_eq!(binding(from_walk.lookup(name, at)), binding(from_words.lookup(name, at)), "{name}");
            }
        }
        // `a` of `a€` is an identifier but not a word of the text: neither way finds it.
        assert!(identifiers.iter().any(|n| tree::text(*n, SOURCE) == "a"));
        assert!(from_walk.occurrences("a").is_empty());
        assert_eq!(from_walk.occurrences("model").len(), 11);
        // Long names alike in all but their middle bytes (which the table's hash does not
        // read) are two spellings.
        for name in ["abcdefgh_1_ijklmnop", "abcdefgh_2_ijklmnop"] {
            assert_eq!(from_walk.occurrences(name).len(), 1, "{name}");
        }
    }

    /// The loops found from their keywords are those a walk of the function finds, in
    /// order, over every function of every fixture and test case, and not trivially: a
    /// comprehension's `for`, and `for` or `while` in strings and comments, are no loops.
    #[test]
    fn loops_found_from_their_keywords_are_those_a_walk_finds() {
        let mut sources = crate::engine::fixture_and_test_sources();
        sources.push(
            "def f(xs):\n    # for each x, while we can\n    s = 'for x in xs while'\n    ys = [x for x in xs]\n    \
             async def g():\n        async for y in ys:\n            pass\n    while xs:\n        for_ = xs.pop()\n"
                .to_string(),
        );
        let mut loops = 0;
        for source in &sources {
            let tree = crate::engine::parse(source).expect("parse");
            let index = FileIndex::new(tree.root_node(), source);
            for function in tree::descendants(tree.root_node()).filter(|n| n.kind_name() == "function_definition") {
                let walked: Vec<usize> =
                    tree::descendants(function).filter(|n| tree::is_loop(n.kind_name())).map(|n| n.id()).collect();
                let found: Vec<usize> = index.loops_in(function).iter().map(|n| n.id()).collect();
                assert_eq!(found, walked, "{}", tree::text(function, source));
                loops += found.len();
            }
        }
        assert!(loops > 100, "{loops} loops");
    }

    /// A question about one function's calls maps that function's occurrences of the
    /// name to nodes, not the whole file's, and finds what slicing the file's would.
    #[test]
    fn calls_in_one_statement_map_only_that_statements_occurrences() {
        let tree = crate::engine::parse(SOURCE).expect("parse");
        let root = tree.root_node();
        let index = FileIndex::new(root, SOURCE);
        let train = SOURCE.find("def train").unwrap()..SOURCE.find("class Net").unwrap();
        let calls = index.calls_named_in("model", train.clone());
        assert_eq!(calls.iter().map(|c| tree::text(*c, SOURCE)).collect::<Vec<_>>(), ["model(x)"]);
        assert!(index.occurrences.borrow().is_empty(), "the file's occurrences were not all mapped");
        let mapped = index.by_statement.borrow()["model"].len();
        assert_eq!(mapped, 1);
        let inside = SOURCE.find("loss = model").unwrap()..SOURCE.find("    def inner").unwrap();
        let from_file = |range: Range<usize>| {
            let all = FileIndex::new(root, SOURCE).occurrences("model");
            starting_in(&all, range).iter().map(|n| n.id()).collect::<Vec<_>>()
        };
        for range in [train, inside, 0..SOURCE.len(), 30..SOURCE.len() - 20] {
            let ids: Vec<usize> = index.occurrences_in("model", range.clone()).iter().map(|n| n.id()).collect();
            assert_eq!(ids, from_file(range.clone()), "{range:?}");
        }
    }

    /// Only a walk that went into every node knows every identifier.
    #[test]
    fn a_walk_that_skips_nodes_gathers_no_identifiers() {
        let tree = crate::engine::parse(SOURCE).expect("parse");
        let root = tree.root_node();
        let start = 0..10;
        assert!(walked(root, Some(std::slice::from_ref(&start)), u32::MAX).is_none());
        assert!(walked(root, None, 3).is_none());
        assert!(walked(root, None, u32::MAX).is_some_and(|ids| ids.len() > 30));
    }
}
