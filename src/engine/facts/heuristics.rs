//! What names say about the code: which callables are models or loss functions, and
//! which functions and loaders belong to evaluation. Kept in one place so that every
//! rule agrees on them.

use crate::engine::text_test;
use std::sync::OnceLock;

/// Split `valLoader`, `val_loader`, `ValLoader2` into lowercase words.
pub fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

const MODEL_NAMES: &[&str] = &[
    "model",
    "net",
    "network",
    "classifier",
    "encoder",
    "decoder",
    "backbone",
    "generator",
    "discriminator",
    "critic",
    "actor",
    "policy",
    "teacher",
    "student",
    "unet",
    "vae",
    "transformer",
    "resnet",
    "detector",
    "segmenter",
];

/// Leading words that make a name a function about a network, not the network
/// (`build_model`, `self._wrap_model`, `get_encoder`).
const VERBS: &[&str] = &[
    "get", "load", "build", "create", "make", "wrap", "unwrap", "init", "setup", "prepare", "save", "compile",
    "freeze", "set", "copy", "clone", "export", "convert", "to", "from", "is", "has", "reset", "register", "apply",
    "update",
];

/// `model`, `self.net`, `ddp_model`, `text_encoder`, `ResNet`: a name that holds a network.
pub fn is_model_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let words = words(name);
    if words.len() > 1 && VERBS.contains(&words[0].as_str()) {
        return false;
    }
    MODEL_NAMES.contains(&lower.as_str()) || words.last().is_some_and(|w| MODEL_NAMES.contains(&w.as_str()))
}

/// `forward`, `_forward`, `forward_features`: code that runs inside one forward pass,
/// where collecting tensors in a list is building the output, not keeping history.
pub fn is_forward_method_name(name: &str) -> bool {
    words(name).iter().any(|w| w == "forward")
}

/// Whether the text calls anything `is_model_name` accepts (`model(`, `self.net (`,
/// `ResNet(`, case aside, as the end of any word): a file without one has no forward
/// pass.
pub fn mentions_forward_call(source: &str) -> bool {
    text_test::case_aside(source, |text| text_test::some_call(text, names_a_network))
}

/// Whether `before`, the text before a call's `(`, ends with a name `is_model_name` may
/// accept (or `forward`), case aside.
fn names_a_network(before: &str) -> bool {
    text_test::ends_with_any_ignore_case(before, MODEL_NAMES)
        || text_test::ends_with_any_ignore_case(before, &["forward"])
}

/// Whether the text has anything that can hold a graph: a forward pass, a loss call
/// (`criterion(`, `loss_fn(`, `F.cross_entropy(`, `nn.MSELoss()`), or a model output's
/// `.loss` / `.logits`, case aside.
pub fn mentions_graph_source(source: &str) -> bool {
    text_test::case_aside(source, |text| {
        // One pass over the calls for the three kinds of callee.
        text_test::some_call(text, |before| {
            text_test::holds_ignore_case(text_test::last_word(before), &["loss", "criterion", "criteria"])
                || text_test::ends_with_any_ignore_case(before, &["cross_entropy", "kl_div"])
                || names_a_network(before)
        }) || text_test::word_after(text, b'.', &["loss", "logits"])
    })
}

/// Whether any word of the text could mark evaluation code (see `EVAL_WORDS`), case
/// aside, inside other words too.
pub fn mentions_evaluation(source: &str) -> bool {
    static SEARCH: OnceLock<aho_corasick::AhoCorasick> = OnceLock::new();
    let search = SEARCH.get_or_init(|| text_test::ignoring_case(EVAL_WORDS));
    text_test::case_aside(source, |text| search.is_match(text))
}

/// Words of a loop's iterable that make its iterations steps over data (`train_loader`,
/// `batches`, `range(num_steps)`, `tqdm(...)`, `val_ds`), not one per component of a
/// model (`text_encoders`, `layers`, `zip(inputs, targets)`).
pub fn is_step_iterable_name(name: &str) -> bool {
    words(name).iter().any(|w| {
        matches!(
            w.as_str(),
            "loader"
                | "loaders"
                | "dataloader"
                | "dl"
                | "data"
                | "dataset"
                | "datasets"
                | "ds"
                | "batch"
                | "batches"
                | "minibatches"
                | "samples"
                | "examples"
                | "epoch"
                | "epochs"
                | "step"
                | "steps"
                | "iter"
                | "iters"
                | "iteration"
                | "iterations"
                | "iterator"
                | "timesteps"
                | "episode"
                | "episodes"
                | "rollouts"
                | "tqdm"
                | "trange"
        )
    }) || is_eval_data_name(name)
}

/// `criterion`, `loss_fn`, `compute_loss`, `ce_loss`, `LossFn`: a name that computes a loss.
pub fn is_loss_function_name(name: &str) -> bool {
    let words = words(name);
    words.iter().any(|w| w == "loss" || w == "criterion" || w == "criteria")
        && !words.iter().any(|w| matches!(w.as_str(), "log" | "print" | "plot" | "record" | "get"))
}

const EVAL_WORDS: &[&str] = &[
    "eval",
    "evaluate",
    "evaluation",
    "evaluator",
    "validate",
    "validation",
    "val",
    "valid",
    "test",
    "testing",
    // `predict` the verb; `noise_prediction_fn`, `model_predictions` name what a network
    // outputs, in training as much as in evaluation.
    "predict",
    "infer",
    "inference",
    "holdout",
];

/// What may follow `test_` in the name of an evaluation loop (`test_one_epoch`).
const EVAL_LOOP_WORDS: &[&str] =
    &["epoch", "loop", "step", "one", "batch", "model", "net", "set", "data", "loader", "fn"];

/// Words that mark a function as training code even when it also validates.
const TRAIN_WORDS: &[&str] = &["train", "training", "fit", "finetune", "optimize", "backward"];

/// `evaluate`, `run_validation`, `test_epoch`, `predict`: evaluation code by its name.
/// `test` does not count in a pytest test function (`test_forward` in `test_model.py`).
pub fn is_eval_function_name(name: &str, in_pytest_file: bool) -> bool {
    are_eval_function_words(&words(name), in_pytest_file)
}

/// `is_eval_function_name` of a name split into its `words`.
fn are_eval_function_words(words: &[String], in_pytest_file: bool) -> bool {
    if words.iter().any(|w| TRAIN_WORDS.contains(&w.as_str())) {
        return false;
    }
    // `test_*` is how pytest and unittest name test cases; only `test_epoch`-like
    // names are evaluation loops, and none of them in a pytest file.
    if let [first, rest @ ..] = words
        && first == "test"
        && !rest.is_empty()
    {
        return !in_pytest_file && rest.iter().all(|w| EVAL_LOOP_WORDS.contains(&w.as_str()));
    }
    words.iter().any(|w| EVAL_WORDS.contains(&w.as_str()))
}

/// Whether `name` may be one that `is_eval_function_name` or `is_eval_data_name`
/// accepts: every word they look for holds one of these, case aside (a test checks it),
/// and this costs far less than splitting a name into words.
pub fn may_name_evaluation(name: &str) -> bool {
    text_test::holds_ignore_case(name, EVALUATION_NAME_PARTS)
}

/// What every word of an evaluation name holds (see `may_name_evaluation`).
const EVALUATION_NAME_PARTS: &[&str] = &["val", "test", "predict", "infer", "holdout"];

/// Whether some run of word characters in the text is a name `is_eval_function_name` (in a
/// pytest file or not) or `is_eval_data_name` accepts, or holds a character past ASCII
/// (left to the tree to decide). Unlike `mentions_evaluation`, words that only hold
/// such a part ("value", "interval") do not count.
pub fn names_evaluation(text: &str) -> bool {
    static SEARCH: OnceLock<aho_corasick::AhoCorasick> = OnceLock::new();
    let search = SEARCH.get_or_init(|| text_test::ignoring_case(EVALUATION_NAME_PARTS));
    search.find_iter(text).any(|part| {
        let start = part.start() - text_test::last_word(&text[..part.start()]).len();
        let end = part.end()
            + text[part.end()..].find(|c| !text_test::is_word_character(c)).unwrap_or(text.len() - part.end());
        let word = &text[start..end];
        if !word.is_ascii() {
            return true;
        }
        // Split once for both questions. Outside a pytest file `is_eval_function_name`
        // accepts every name it accepts inside one (only `test_*` names differ, and
        // those only outside), so asking outside covers both.
        let words = words(word);
        are_eval_data_words(&words) || are_eval_function_words(&words, false)
    })
}

/// `val_loader`, `test_dl`, `eval_dataset`: an evaluation data source by its name.
pub fn is_eval_data_name(name: &str) -> bool {
    are_eval_data_words(&words(name))
}

/// `is_eval_data_name` of a name split into its `words`.
fn are_eval_data_words(words: &[String]) -> bool {
    words.iter().any(|w| EVAL_DATA_WORDS.contains(&w.as_str()))
}

const EVAL_DATA_WORDS: &[&str] = &["val", "valid", "validation", "test", "testing", "eval", "evaluation", "holdout"];

/// Lightning's evaluation hooks run under `torch.no_grad()` already.
pub fn is_framework_no_grad_hook(name: &str) -> bool {
    matches!(name, "validation_step" | "test_step" | "predict_step" | "on_validation_batch_end" | "on_test_batch_end")
}

pub fn is_pytest_file(path: &std::path::Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.starts_with("test_") || name.ends_with("_test.py") || name == "conftest.py"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole-text tests answer as the regexes they stand for (`text_test`), over the
    /// scans' own test texts and every fixture and test file of the project.
    #[test]
    fn the_whole_text_tests_answer_as_their_regexes() {
        let names = MODEL_NAMES.join("|");
        let forward = regex::Regex::new(&format!(r"(?i)(?:{names}|forward)\s*\(")).unwrap();
        let graph = regex::Regex::new(
            r"(?i)(?:loss|criterion|criteria)\w*\s*\(|(?:cross_entropy|kl_div)\s*\(|\.(?:loss|logits)\b",
        )
        .unwrap();
        let evaluation = regex::Regex::new(&format!("(?i){}", EVAL_WORDS.join("|"))).unwrap();
        let mut texts: Vec<String> = text_test::tests::TEXTS.iter().map(|t| t.to_string()).collect();
        texts
            .extend(["net.to(x)", "self.ResNet (y)", "Teacher\n(", "ForWard(", "F.KL_div(", "valid"].map(String::from));
        texts.extend(crate::engine::fixture_and_test_sources());
        assert!(texts.len() > 100, "the fixtures and tests are found");
        for text in &texts {
            assert_eq!(mentions_forward_call(text), forward.is_match(text), "forward call in {text:?}");
            assert_eq!(
                mentions_graph_source(text),
                graph.is_match(text) || forward.is_match(text),
                "graph in {text:?}"
            );
            assert_eq!(mentions_evaluation(text), evaluation.is_match(text), "evaluation in {text:?}");
        }
    }

    /// `may_name_evaluation` passes every word the two tests it stands before look for
    /// (`test_epoch` is accepted for its word `test`), and so every name they accept.
    #[test]
    fn every_evaluation_word_may_name_evaluation() {
        for word in EVAL_WORDS.iter().chain(EVAL_DATA_WORDS) {
            assert!(may_name_evaluation(word), "{word}");
            assert!(may_name_evaluation(&word.to_uppercase()), "{word}");
        }
        assert!(may_name_evaluation("run_Validation") && !may_name_evaluation("train_step"));
    }

    /// What `names_evaluation` relies on to ask one question, not two: a name
    /// `is_eval_function_name` accepts in a pytest file it accepts outside one too.
    #[test]
    fn an_evaluation_name_in_a_pytest_file_is_one_outside() {
        let parts: Vec<&str> = (EVAL_WORDS.iter().chain(EVAL_LOOP_WORDS).chain(TRAIN_WORDS))
            .copied()
            .chain(["Test", "x", "loss"])
            .collect();
        let mut accepted = 0;
        for a in &parts {
            for b in &parts {
                for name in [a.to_string(), format!("{a}_{b}"), format!("test_{a}_{b}"), format!("{a}{b}")] {
                    if is_eval_function_name(&name, true) {
                        assert!(is_eval_function_name(&name, false), "{name}");
                        accepted += 1;
                    }
                }
            }
        }
        assert!(accepted > 100, "{accepted} names accepted");
    }

    #[test]
    fn splits_snake_and_camel_case() {
        assert_eq!(words("valLoader2_x"), ["val", "loader2", "x"]);
        assert_eq!(words("ResNet"), ["res", "net"]);
        assert_eq!(words("__init__"), ["init"]);
    }

    #[test]
    fn recognises_models_losses_and_evaluation() {
        assert!(is_model_name("model") && is_model_name("ddp_model") && is_model_name("ResNet"));
        assert!(!is_model_name("optimizer") && !is_model_name("model_path_str") && !is_model_name("netloc"));
        assert!(!is_model_name("_wrap_model") && !is_model_name("build_model") && is_model_name("teacher_model"));
        assert!(is_loss_function_name("criterion") && is_loss_function_name("loss_fn"));
        assert!(!is_loss_function_name("log_loss_value") && !is_loss_function_name("optimizer"));
        assert!(is_eval_function_name("run_validation", false) && is_eval_function_name("test", false));
        assert!(!is_eval_function_name("train_and_validate", false));
        assert!(is_eval_function_name("test_one_epoch", false) && !is_eval_function_name("test_one_epoch", true));
        assert!(!is_eval_function_name("test_ddp_inference", false) && is_eval_function_name("test", true));
        assert!(is_eval_data_name("val_loader") && is_eval_data_name("testLoader"));
        assert!(!is_eval_data_name("interval") && !is_eval_data_name("latest"));
    }
}
