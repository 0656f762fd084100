//! Which expressions hold a tensor still attached to an autograd graph (a loss, a model
//! output, anything computed from them) and which hold a detached value (`.item()`,
//! `.detach()`, `float(...)`, `.data`, `.tolist()`, anything computed under no_grad).
//! Unknown values are neither: rules stay silent on them.

use super::Facts;
use super::heuristics;
use super::index::BindingKind;
use crate::engine::field;
use crate::engine::tree::{self, KindName};
use tree_sitter::Node;

/// How far a chain of assignments is followed back.
const MAX_DEPTH: usize = 12;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorValue {
    /// Holds a graph: `criterion(out, y)`, `model(x)`, `outputs.loss`, `loss / 4`.
    Attached,
    /// Holds no graph: a Python number, or a tensor cut from its graph.
    Detached,
    Unknown,
}

/// Methods whose result is cut from the graph or holds no gradient (indices, booleans).
const DETACHING_METHODS: &[&str] = &[
    "item",
    "detach",
    "detach_",
    "tolist",
    "numpy",
    "argmax",
    "argmin",
    "argsort",
    "numel",
    "size",
    "dim",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "long",
    "int",
    "bool",
    "isnan",
    "isinf",
    "isfinite",
    "nonzero",
    "requires_grad_",
];

/// Methods whose result stays on the receiver's graph.
pub const GRAPH_KEEPING_METHODS: &[&str] = &[
    "mean",
    "sum",
    "view",
    "reshape",
    "squeeze",
    "unsqueeze",
    "flatten",
    "float",
    "double",
    "half",
    "bfloat16",
    "to",
    "cuda",
    "cpu",
    "contiguous",
    "clone",
    "softmax",
    "log_softmax",
    "sigmoid",
    "tanh",
    "exp",
    "log",
    "abs",
    "pow",
    "sqrt",
    "mul",
    "add",
    "div",
    "sub",
    "permute",
    "transpose",
    "t",
    "norm",
    "squeeze_",
    "masked_fill",
    "expand",
    "repeat",
    "max",
    "min",
    "chunk",
    "split",
    "unbind",
    "forward",
    "__call__",
];

/// Builtins that return plain Python values.
const DETACHING_BUILTINS: &[&str] = &["float", "int", "bool", "len", "str", "repr", "round", "list"];

/// Attributes of a model output that stay on its graph.
const OUTPUT_FIELDS: &[&str] =
    &["loss", "logits", "last_hidden_state", "pooler_output", "hidden_states", "T", "real", "imag"];

/// What the asker of a value needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    /// Attached, Detached or Unknown.
    Exactly,
    /// Whether it is Attached: a value that is not may come back as Detached or Unknown.
    /// A name bound where gradients are disabled holds no graph, and that is asked only
    /// of a value that would hold one otherwise: the grad mode of a function can take
    /// its callers in other files to tell, while most values a rule asks about are not
    /// attached whatever the grad mode.
    Attached,
}

impl<'t> Facts<'t> {
    pub fn tensor_value(&self, expr: Node<'t>) -> TensorValue {
        self.value_at_depth(expr, 0, Asked::Exactly)
    }

    /// Whether `expr` holds a graph-attached tensor: `tensor_value(expr) == Attached`,
    /// asking no more than that takes (see [`Asked::Attached`]).
    pub fn holds_graph(&self, expr: Node<'t>) -> bool {
        self.value_at_depth(expr, 0, Asked::Attached) == TensorValue::Attached
    }

    /// `expr`'s value, or with `Asked::Attached` whether it is Attached. An operand, a
    /// model output's field, a name's value or a call is asked what `expr` is asked; what
    /// counts only when attached (the operand of `loss += x`, a loss's argument) whether
    /// it is; a call's receiver and what a function returns, exactly.
    fn value_at_depth(&self, expr: Node<'t>, depth: usize, asked: Asked) -> TensorValue {
        use TensorValue::*;
        if depth > MAX_DEPTH {
            return Unknown;
        }
        let expr = tree::unparenthesize(expr);
        match expr.kind_name() {
            "integer" | "float" | "string" | "true" | "false" | "none" | "concatenated_string" => Detached,
            "identifier" => self.name_value(expr, depth, asked),
            "attribute" => {
                let (Some(object), Some(attribute)) =
                    (expr.child_by_field_id(field::OBJECT), expr.child_by_field_id(field::ATTRIBUTE))
                else {
                    return Unknown;
                };
                match self.text(attribute) {
                    "data" | "shape" | "dtype" | "device" | "grad" | "requires_grad" => Detached,
                    field if OUTPUT_FIELDS.contains(&field) => self.value_at_depth(object, depth + 1, asked),
                    _ => Unknown,
                }
            }
            "subscript" => match expr.child_by_field_id(field::VALUE) {
                // `compute_loss(...)[1]`: the item the callee returns at that position.
                Some(value) if value.kind_name() == "call" => {
                    let position = expr
                        .child_by_field_id(field::SUBSCRIPT)
                        .filter(|k| k.kind_name() == "integer")
                        .and_then(|k| self.text(k).parse::<usize>().ok());
                    match position.and_then(|p| self.returned_value(value, Some(p), depth + 1)) {
                        Some(known) => known,
                        None => self.value_at_depth(value, depth + 1, asked),
                    }
                }
                Some(value) => self.value_at_depth(value, depth + 1, asked),
                None => Unknown,
            },
            "binary_operator" => {
                let operands = [expr.child_by_field_id(field::LEFT), expr.child_by_field_id(field::RIGHT)];
                let values: Vec<TensorValue> =
                    operands.into_iter().flatten().map(|o| self.value_at_depth(o, depth + 1, asked)).collect();
                if values.contains(&Attached) {
                    Attached
                } else if values.iter().all(|v| *v == Detached) {
                    Detached
                } else {
                    Unknown
                }
            }
            "unary_operator" => match expr.child_by_field_id(field::ARGUMENT) {
                Some(argument) => self.value_at_depth(argument, depth + 1, asked),
                None => Unknown,
            },
            "call" => self.call_value(expr, depth, asked),
            // `{"loss": total, "acc": acc}`: detached when every value is.
            "dictionary" => {
                let values: Vec<TensorValue> = expr
                    .named_children(&mut expr.walk())
                    .filter(|pair| pair.kind_name() == "pair")
                    .filter_map(|pair| pair.child_by_field_id(field::VALUE))
                    .map(|v| self.value_at_depth(v, depth + 1, asked))
                    .collect();
                if values.contains(&Attached) {
                    Attached
                } else if !values.is_empty() && values.iter().all(|v| *v == Detached) {
                    Detached
                } else {
                    Unknown
                }
            }
            _ => Unknown,
        }
    }

    fn name_value(&self, name: Node<'t>, depth: usize, asked: Asked) -> TensorValue {
        let Some(binding) = self.index().lookup(self.text(name), name) else { return TensorValue::Unknown };
        // Whatever was computed with gradients disabled holds no graph.
        let disabled = || self.grad_disabled(binding.statement);
        if asked == Asked::Exactly && disabled() {
            return TensorValue::Detached;
        }
        let value = match binding.kind {
            BindingKind::Value(value) => self.value_at_depth(value, depth + 1, asked),
            BindingKind::Unpacked(value) => match self.value_at_depth(value, depth + 1, asked) {
                // `logits, loss = model(x)`: a model's outputs all carry its graph.
                TensorValue::Attached if self.is_forward_or_loss_call(value) => TensorValue::Attached,
                // `hidden, out = mlp.forward(x)` of a network that computes its own gradients.
                TensorValue::Detached if self.is_hand_written_forward(value) => TensorValue::Detached,
                _ => TensorValue::Unknown,
            },
            // `loss *= n`: the name carries the graph of its operand or of its earlier value.
            BindingKind::Augmented(value) => {
                let earlier = tree::parent(value)
                    .and_then(|a| a.child_by_field_id(field::LEFT))
                    .filter(|target| target.kind_name() == "identifier")
                    .and_then(|target| self.index().lookup(self.text(target), target).map(|b| (target, b)))
                    .filter(|(_, b)| b.statement.id() != binding.statement.id());
                let attached = self.value_at_depth(value, depth + 1, Asked::Attached) == TensorValue::Attached
                    || earlier.is_some_and(|(target, _)| {
                        self.value_at_depth(target, depth + 1, Asked::Attached) == TensorValue::Attached
                    });
                if attached { TensorValue::Attached } else { TensorValue::Unknown }
            }
            _ => TensorValue::Unknown,
        };
        if asked == Asked::Attached && value == TensorValue::Attached && disabled() {
            return TensorValue::Detached;
        }
        value
    }

    fn call_value(&self, call: Node<'t>, depth: usize, asked: Asked) -> TensorValue {
        use TensorValue::*;
        let Some(function) = call.child_by_field_id(field::FUNCTION) else { return Unknown };
        if function.kind_name() == "identifier" && DETACHING_BUILTINS.contains(&self.text(function)) {
            return Detached;
        }
        if function.kind_name() == "attribute" {
            let method = tree::last_name(function, self.source).unwrap_or("");
            let receiver = function.child_by_field_id(field::OBJECT);
            if DETACHING_METHODS.contains(&method) {
                return Detached;
            }
            if GRAPH_KEEPING_METHODS.contains(&method)
                && let Some(receiver) = receiver
            {
                let value = self.value_at_depth(receiver, depth + 1, Asked::Exactly);
                if value != Unknown {
                    return value;
                }
            }
        }
        if self.is_forward_call(call) && self.is_frozen_module(call) {
            return Unknown; // no parameter takes a gradient; the input may still carry one
        }
        if self.is_hand_written_forward(call) {
            return Detached;
        }
        // A loss of a prediction cut from its graph (`criterion(out.data, y)`,
        // `mse(out.detach(), y)`), or of what a hand-written network returns, holds no
        // graph unless another argument does. Only the prediction's place counts for a
        // cut: a target cut from its graph (`mse_loss(q, target.detach())`) is common in
        // losses that do backpropagate.
        if self.is_loss_call(call) {
            let arguments = tree::positional_args(call);
            let cut = arguments.first().is_some_and(|a| self.cut_from_graph(*a, depth + 1, true))
                || arguments.iter().any(|a| self.cut_from_graph(*a, depth + 1, false));
            if cut && arguments.iter().all(|a| self.value_at_depth(*a, depth + 1, Asked::Attached) != Attached) {
                return Detached;
            }
        }
        // A function of another project file: what its own `return`s hand back, whatever
        // its name says.
        if let Some((value, _)) = self.project_callee(call) {
            return value;
        }
        // A function of this file known to return detached values, whatever its name says
        // (`evaluate_loss(...)` run under no_grad, returning `.item()` sums). Only a forward
        // pass or a loss is attached otherwise: asked only that, the returns of another
        // function are not read.
        let forward_or_loss = self.is_forward_or_loss_call(call);
        if (forward_or_loss || asked == Asked::Exactly)
            && let Some(Detached) = self.returned_value(call, None, depth + 1)
        {
            return Detached;
        }
        if forward_or_loss {
            if self.computes_gradients_by_hand(tree::enclosing_body(call)) {
                return Detached;
            }
            return Attached;
        }
        Unknown
    }

    /// Whether `region` (a function body or the module) computes its gradients by hand,
    /// as teaching code for a network written from scratch does: it runs a backward pass
    /// of its own (`net.backward(x, out, y)` with the tensors it needs, or a function of
    /// this file named for one, `compute_backward_pass(...)`, `backprop(...)`) and no
    /// autograd backward (`loss.backward()`). Nothing in it needs a graph, and the
    /// forward passes and losses it computes hold none.
    pub fn computes_gradients_by_hand(&self, region: Node<'t>) -> bool {
        *self.memo("tensors::computes_gradients_by_hand", Some(region), || {
            let hand_written: Vec<String> = self
                .memo("tensors::hand_written_backward_functions", None, || {
                    let mut names = Vec::new();
                    let mut cursor = self.root.walk();
                    let mut stack = vec![self.root];
                    while let Some(node) = stack.pop() {
                        if node.kind_name() == "function_definition"
                            && let Some(name) = node.child_by_field_id(field::NAME)
                            && heuristics::words(self.text(name)).iter().any(|w| w == "backward" || w == "backprop")
                        {
                            names.push(self.text(name).to_string());
                        }
                        stack.extend(node.named_children(&mut cursor).filter(|c| {
                            matches!(
                                c.kind_name(),
                                "module"
                                    | "block"
                                    | "function_definition"
                                    | "class_definition"
                                    | "decorated_definition"
                            )
                        }));
                    }
                    names
                })
                .as_ref()
                .clone();
            let backward_calls = self.calls_named(&["backward"], region);
            let by_autograd = backward_calls.iter().any(|c| tree::positional_args(*c).len() <= 1);
            if by_autograd {
                return false;
            }
            let by_method = backward_calls.iter().any(|c| {
                tree::positional_args(*c).len() >= 2
                    && tree::method_receiver(*c)
                        .and_then(|r| tree::last_name(r, self.source))
                        .is_some_and(heuristics::is_model_name)
            });
            by_method
                || hand_written.iter().any(|name| {
                    self.index().calls_named_in(name, region.byte_range()).into_iter().any(|c| {
                        c.child_by_field_id(field::FUNCTION).is_some_and(|f| f.kind_name() == "identifier")
                            && self.local_definition(c).is_some_and(|definition| {
                                // `def backward_step(loss): loss.backward()` is autograd's.
                                !self
                                    .calls_named(&["backward"], definition)
                                    .iter()
                                    .any(|b| tree::positional_args(*b).len() <= 1)
                            })
                    })
                })
        })
    }

    /// `mlp.forward(x)` (or `mlp(x)`) where the same function also calls `mlp.backward(...)`:
    /// a network written by hand, computing its own gradients. `nn.Module` has no
    /// `backward` method, so a network with one is not run by autograd.
    pub fn is_hand_written_forward(&self, call: Node<'t>) -> bool {
        let Some(function) = call.child_by_field_id(field::FUNCTION) else { return false };
        let network = match function.kind_name() {
            "attribute" if tree::last_name(function, self.source) == Some("forward") => {
                function.child_by_field_id(field::OBJECT)
            }
            "identifier" if heuristics::is_model_name(self.text(function)) => Some(function),
            _ => None,
        };
        let Some(network) = network.filter(|n| matches!(n.kind_name(), "identifier" | "attribute")) else {
            return false;
        };
        let network = self.text(network);
        let region = tree::enclosing_body(call);
        self.calls_named(&["backward"], region).into_iter().any(|backward| {
            !tree::positional_args(backward).is_empty()
                && tree::method_receiver(backward).is_some_and(|r| self.text(r) == network)
        })
    }

    /// Whether `expr` is a value cut from its graph on purpose: `.data`, `.detach()`
    /// (`at_prediction`), or the output of a hand-written network (anywhere), followed
    /// through names and graph-keeping methods (`out.data.cpu()`).
    fn cut_from_graph(&self, expr: Node<'t>, depth: usize, at_prediction: bool) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        let expr = tree::unparenthesize(expr);
        match expr.kind_name() {
            "identifier" => match self.index().lookup(self.text(expr), expr).map(|b| b.kind) {
                Some(BindingKind::Value(value) | BindingKind::Unpacked(value)) => {
                    self.cut_from_graph(value, depth + 1, at_prediction)
                }
                _ => false,
            },
            "attribute" => {
                at_prediction && expr.child_by_field_id(field::ATTRIBUTE).is_some_and(|a| self.text(a) == "data")
            }
            "call" => {
                if self.is_hand_written_forward(expr) {
                    return true;
                }
                let method = tree::callee_name(expr, self.source).unwrap_or("");
                let receiver = tree::method_receiver(expr);
                (at_prediction && matches!(method, "detach" | "detach_") && receiver.is_some())
                    || (GRAPH_KEEPING_METHODS.contains(&method)
                        && receiver.is_some_and(|r| self.cut_from_graph(r, depth + 1, at_prediction)))
            }
            _ => false,
        }
    }

    /// Whether `name` in `scope` is a function, class or module of the code rather than a
    /// network: bound by `def`, `class` or `import`, and never to another value (`import
    /// model` ... `model = torch.load(f)` rebinds it to a network, which a function reading
    /// the global sees once it runs), except to a wrapper of itself (`f =
    /// torch.jit.trace(f, ...)`, `torch.compile(f)`).
    /// `at` is a use of the name, from whose scope chain `scope` is.
    fn names_code(&self, name: &str, at: Node<'t>, scope: super::index::ScopeId) -> bool {
        let Some(scope) = self.index().scope_chain(at).into_iter().find(|s| s.id() == scope) else { return false };
        let bindings = self.index().bindings_in(scope, name);
        let in_scope = || bindings.iter();
        in_scope().any(|b| matches!(b.kind, BindingKind::Definition | BindingKind::Import))
            && in_scope().all(|b| match b.kind {
                BindingKind::Value(value) => tree::mentions(value, name, self.source),
                _ => true,
            })
    }

    /// What a call of a function defined in this file returns (`position`: one item of a
    /// returned tuple): `Some` only when every `return` of it agrees.
    fn returned_value(&self, call: Node<'t>, position: Option<usize>, depth: usize) -> Option<TensorValue> {
        if depth > MAX_DEPTH {
            return None;
        }
        let definition = self.local_definition(call)?;
        let mut agreed = None;
        for statement in tree::descendants(definition).filter(|n| n.kind_name() == "return_statement") {
            if tree::enclosing_function(statement).map(|f| f.id()) != Some(definition.id()) {
                continue;
            }
            let returned = statement.named_child(0)?;
            let returned = match (position, tree::unparenthesize(returned)) {
                (Some(p), tuple) if matches!(tuple.kind_name(), "expression_list" | "tuple") => {
                    tuple.named_children(&mut tuple.walk()).nth(p)?
                }
                (Some(_), _) => return None,
                (None, value) => value,
            };
            let value = self.value_at_depth(returned, depth + 1, Asked::Exactly);
            if agreed.is_some_and(|a| a != value) {
                return None;
            }
            agreed = Some(value);
        }
        agreed.filter(|v| *v != TensorValue::Unknown)
    }

    /// The `def` a call reaches in this file: `f(...)` for a function bound here,
    /// `self.f(...)` for a method of the enclosing class.
    pub fn local_definition(&self, call: Node<'t>) -> Option<Node<'t>> {
        let function = call.child_by_field_id(field::FUNCTION)?;
        match function.kind_name() {
            "identifier" => {
                let binding = self.index().lookup(self.text(function), function)?;
                (matches!(binding.kind, BindingKind::Definition)
                    && binding.statement.kind_name() == "function_definition")
                    .then_some(binding.statement)
            }
            "attribute" => {
                let object = function.child_by_field_id(field::OBJECT)?;
                if object.kind_name() != "identifier" || self.text(object) != "self" {
                    return None;
                }
                let name = self.text(function.child_by_field_id(field::ATTRIBUTE)?);
                let class = tree::ancestors(call).find(|a| a.kind_name() == "class_definition")?;
                let body = class.child_by_field_id(field::BODY)?;
                body.named_children(&mut body.walk())
                    .map(|d| {
                        if d.kind_name() == "decorated_definition" {
                            d.child_by_field_id(field::DEFINITION).unwrap_or(d)
                        } else {
                            d
                        }
                    })
                    .find(|d| {
                        d.kind_name() == "function_definition"
                            && d.child_by_field_id(field::NAME).is_some_and(|n| self.text(n) == name)
                    })
            }
            _ => None,
        }
    }

    /// A network the file freezes: `text_encoder.requires_grad_(False)` (also after
    /// `.eval()` or `.to(...)`), or `for p in vae.parameters(): p.requires_grad = False` (also over
    /// `named_parameters()`).
    /// Its outputs carry a graph only through an input that requires one.
    pub fn is_frozen_module(&self, call: Node<'t>) -> bool {
        let Some(function) = call.child_by_field_id(field::FUNCTION) else { return false };
        let network = match tree::last_name(function, self.source) {
            Some("forward") => function.child_by_field_id(field::OBJECT),
            _ => Some(function),
        };
        // `G = copy.deepcopy(G0).eval().requires_grad_(False)`: frozen where it is made.
        if let Some(name) = network.filter(|n| n.kind_name() == "identifier")
            && let Some(binding) = self.index().lookup(self.text(name), name)
            && let BindingKind::Value(value) = binding.kind
            && self.text(value).contains("requires_grad_(False)")
        {
            return true;
        }
        let Some(network) = network.map(|n| self.text(n)) else { return false };
        let freezes = self.calls_named(&["requires_grad_"], self.root).into_iter().any(|freeze| {
            let off = tree::positional_args(freeze)
                .first()
                .copied()
                .or_else(|| tree::keyword_arg(freeze, "requires_grad", self.source))
                .is_some_and(|a| self.text(a) == "False");
            off && tree::method_receiver(freeze)
                .is_some_and(|r| self.text(strip_module_moves(r, self.source)) == network)
        });
        freezes
            || self.calls_named(&["parameters", "named_parameters"], self.root).into_iter().any(|parameters| {
                let Some(receiver) = tree::method_receiver(parameters) else { return false };
                let Some(loop_) = tree::parent(parameters).filter(|p| p.kind_name() == "for_statement") else {
                    return false;
                };
                self.text(receiver) == network && freezes_every_parameter(loop_, self.source)
            })
    }

    /// A call that builds a graph: a forward pass, a loss, or a project function
    /// returning a graph-attached tensor.
    pub fn builds_graph(&self, call: Node<'t>) -> bool {
        self.is_forward_or_loss_call(call)
            || self.project_callee(call).is_some_and(|(value, _)| value == TensorValue::Attached)
    }

    /// A call that runs a network or computes a loss: its result carries a graph
    /// wherever gradients are enabled.
    pub fn is_forward_or_loss_call(&self, call: Node<'t>) -> bool {
        self.is_loss_call(call) || self.is_forward_call(call)
    }

    /// `criterion(out, y)`, `F.cross_entropy(...)`, `self.loss_fn(...)`, or a call of a
    /// name bound to `nn.SomethingLoss()`.
    pub fn is_loss_call(&self, call: Node<'t>) -> bool {
        let Some(function) = call.child_by_field_id(field::FUNCTION) else { return false };
        let Some(name) = tree::last_name(function, self.source) else { return false };
        if heuristics::is_loss_function_name(name) {
            return true;
        }
        let functional = match function.kind_name() {
            "attribute" => {
                let qualified = self.qualified_name(function);
                let object = function.child_by_field_id(field::OBJECT).map(|o| self.text(o));
                qualified.is_some_and(|q| q.starts_with("torch.nn.functional."))
                    || matches!(object, Some("F" | "functional" | "nn.functional" | "torch.nn.functional"))
            }
            _ => self.qualified_name(function).is_some_and(|q| q.starts_with("torch.nn.functional.")),
        };
        if functional {
            return matches!(
                name,
                "cross_entropy"
                    | "nll_loss"
                    | "mse_loss"
                    | "l1_loss"
                    | "smooth_l1_loss"
                    | "huber_loss"
                    | "binary_cross_entropy"
                    | "binary_cross_entropy_with_logits"
                    | "kl_div"
                    | "ctc_loss"
                    | "margin_ranking_loss"
                    | "cosine_embedding_loss"
                    | "triplet_margin_loss"
            ) || name.ends_with("_loss");
        }
        // `ce = nn.CrossEntropyLoss()` ... `ce(out, y)`
        if function.kind_name() == "identifier"
            && let Some(binding) = self.index().lookup(name, function)
            && let BindingKind::Value(value) = binding.kind
        {
            return value.kind_name() == "call"
                && tree::callee_name(value, self.source).is_some_and(|c| c.ends_with("Loss"));
        }
        false
    }

    /// `model(x)`, `self.net(x)`, `model.forward(x)`, `encoder(x)`.
    pub fn is_forward_call(&self, call: Node<'t>) -> bool {
        let Some(function) = call.child_by_field_id(field::FUNCTION) else { return false };
        match function.kind_name() {
            // A variable holding a network, not a class (`ResNet(...)`), a function or
            // an import (`get_default_generator()`).
            "identifier" => {
                let name = self.text(function);
                heuristics::is_model_name(name)
                    && !name.starts_with(char::is_uppercase)
                    && !self.index().lookup(name, function).is_some_and(|b| self.names_code(name, function, b.scope))
            }
            "attribute" => {
                let Some(name) = tree::last_name(function, self.source) else { return false };
                let object = function.child_by_field_id(field::OBJECT);
                if name == "forward" {
                    return object.and_then(|o| tree::last_name(o, self.source)).is_some_and(heuristics::is_model_name);
                }
                // `self.model(x)`, `trainer.model(x)`; not `torch.nn.Transformer(...)` or a
                // method of a module (`model.eval()`).
                heuristics::is_model_name(name)
                    && !name.chars().next().is_some_and(char::is_uppercase)
                    && object.is_some_and(|o| o.kind_name() == "identifier" && self.text(o) == "self")
            }
            _ => false,
        }
    }
}

/// `model` for `model.eval()`, `model.to(device)`, `model.cuda()`: the module a chain of
/// mode and device moves starts from.
/// `for p in net.parameters(): p.requires_grad = False` (or `for name, p in
/// net.named_parameters(): ...`): the assignment stands directly in the loop's body, so it
/// reaches every parameter; one under an `if` (`if "lora" not in name:`) freezes only some.
fn freezes_every_parameter(loop_: Node, source: &str) -> bool {
    let Some(body) = loop_.child_by_field_id(field::BODY) else { return false };
    let Some(target) = loop_.child_by_field_id(field::LEFT) else { return false };
    // The parameter is the loop variable, or the last name of `name, p`.
    let parameter = match target.kind_name() {
        "identifier" => Some(target),
        _ => target.named_children(&mut target.walk()).last().filter(|n| n.kind_name() == "identifier"),
    };
    let Some(parameter) = parameter.map(|p| tree::text(p, source)) else { return false };
    body.named_children(&mut body.walk()).any(|statement| {
        let compact: String = tree::text(statement, source).chars().filter(|c| !c.is_whitespace()).collect();
        statement.kind_name() == "expression_statement" && compact == format!("{parameter}.requires_grad=False")
    })
}

fn strip_module_moves<'t>(mut node: Node<'t>, source: &str) -> Node<'t> {
    while node.kind_name() == "call" {
        let Some(receiver) = tree::method_receiver(node) else { break };
        if !matches!(tree::callee_name(node, source), Some("eval" | "train" | "to" | "cuda" | "cpu" | "half" | "float"))
        {
            break;
        }
        node = receiver;
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Related;
    use crate::engine::facts::cross_file::{Callers, ParsedFile, ProjectFacts, ProjectSession};
    use std::path::Path;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A project with no other file, that counts the questions about callers it is asked.
    struct Counting(AtomicUsize);

    impl ProjectSession for &Counting {
        fn callers(&self, _: &Path, _: &str) -> Callers {
            self.0.fetch_add(1, Ordering::Relaxed);
            Callers::default()
        }
        fn decorator_disables_grad(&self, _: &Path, _: Option<&str>, _: &str) -> Option<Related> {
            None
        }
        fn callee_returns(&self, _: &Path, _: Option<&str>, _: &str) -> Option<(TensorValue, Related)> {
            None
        }
    }

    impl ProjectFacts for Counting {
        fn session<'s>(&'s self, _: Option<ParsedFile<'s>>) -> Box<dyn ProjectSession + 's> {
            Box::new(self)
        }
    }

    /// The last identifier spelled `name` in `source`.
    fn last_use<'t>(root: Node<'t>, source: &str, name: &str) -> Node<'t> {
        tree::descendants(root)
            .filter(|n| n.kind_name() == "identifier" && tree::text(*n, source) == name)
            .last()
            .expect("the name is used")
    }

    /// Whether a value holds a graph is the exact answer's Attached, and the grad mode of
    /// the function that binds a name is asked only of a value attached otherwise: a
    /// method nothing in the file calls takes the project's callers to tell. What a
    /// function returns is read only for a forward pass or a loss.
    #[test]
    fn holds_graph_asks_the_grad_mode_only_of_attached_values() {
        let source = "\
def load(path):
    pixels = read(path)
    return pixels

class Images:
    def __init__(self, paths):
        for path in paths:
            image = load(path)
            self.images.append(image)

    def step(self, x):
        out = self.model(x)
        self.outputs.append(out)
";
        let tree = crate::engine::parse(source).unwrap();
        let root = tree.root_node();
        let _parents = tree::index_parents(root);
        let project = Counting(AtomicUsize::new(0));
        let asked = || project.0.load(Ordering::Relaxed);
        let facts = Facts::new(source, root, Path::new("train.py")).with_project(Some(&project));
        let image = last_use(root, source, "image");
        assert!(!facts.holds_graph(image));
        assert_eq!(asked(), 0);
        let out = last_use(root, source, "out");
        assert!(facts.holds_graph(out));
        assert_eq!(asked(), 1, "an attached value is asked whether its function runs without gradients");
        assert_eq!(facts.tensor_value(image), TensorValue::Unknown);
        assert_eq!(asked(), 2, "the exact answer tells Detached from Unknown");
        assert_eq!(facts.tensor_value(out), TensorValue::Attached);
    }
}
