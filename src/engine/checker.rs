//! What a rule's `check` function receives: one query match with its captures by name,
//! and a `Checker` to consult shared facts and report findings.

use crate::diagnostic::{Diagnostic, Severity, TextRange};
use crate::engine::facts::Facts;
use crate::rules::Rule;
use foldhash::HashSet;
use tree_sitter::Node;

pub struct Match<'e, 't> {
    /// Capture names of the query, indexed by capture index.
    pub(crate) names: &'e [String],
    pub(crate) captures: Vec<(u32, Node<'t>)>,
}

impl<'t> Match<'_, 't> {
    /// The first node captured as `@name`.
    pub fn get(&self, name: &str) -> Option<Node<'t>> {
        self.captures.iter().find(|(index, _)| self.names[*index as usize] == name).map(|(_, node)| *node)
    }
}

pub struct Checker<'a, 't> {
    pub facts: &'a Facts<'t>,
    pub(crate) rule: &'static Rule,
    pub(crate) diagnostics: &'a mut Vec<Diagnostic>,
    /// (rule code, key) pairs already reported, for rules that report once per place.
    pub(crate) reported: &'a mut HashSet<(&'static str, usize)>,
}

impl<'a, 't> Checker<'a, 't> {
    pub fn source(&self) -> &'t str {
        self.facts.source
    }

    pub fn text(&self, node: Node) -> &'t str {
        self.facts.text(node)
    }

    /// Report a finding; attach a fix through the returned diagnostic.
    pub fn report(&mut self, node: Node, severity: Severity, message: String, help: String) -> &mut Diagnostic {
        let diagnostic = Diagnostic {
            code: self.rule.code,
            range: TextRange::of(node),
            severity,
            message,
            help,
            fix: None,
            related: Vec::new(),
        };
        self.diagnostics.push(diagnostic);
        self.diagnostics.last_mut().expect("just pushed")
    }

    /// Report unless this rule already reported for `key` (a node id) in this file.
    pub fn report_once(
        &mut self,
        key: usize,
        node: Node,
        severity: Severity,
        message: String,
        help: String,
    ) -> Option<&mut Diagnostic> {
        self.reported.insert((self.rule.code, key)).then(|| self.report(node, severity, message, help))
    }
}
