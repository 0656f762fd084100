use std::time::Instant;
use tree_sitter::{InputEdit, Point};
fn pt(s: &str, at: usize) -> Point {
    let row = s[..at].matches('\n').count();
    Point::new(row, at - s[..at].rfind('\n').map_or(0, |p| p + 1))
}
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let mut text = std::fs::read_to_string(path).unwrap();
    let mut tree = oomlint::engine::parse(&text).unwrap();
    // warm
    tree = oomlint::engine::reparse(&text, Some(&tree)).unwrap();
    let function = text.len() / 2 + text[text.len() / 2..].find("\ndef train_").unwrap();
    let anchor = function + text[function..].find("optimizer.step()").unwrap() + "optimizer.step()".len();
    let line = "scaled = loss.item() * lr";
    let mut edits: Vec<(usize, String)> = vec![(anchor, "\n        ".into())];
    for (i, c) in line.chars().enumerate() {
        edits.push((anchor + 9 + i, c.to_string()));
    }
    for (at, ins) in edits {
        let (sp,) = (pt(&text, at),);
        text.insert_str(at, &ins);
        let ep = pt(&text, at + ins.len());
        tree.edit(&InputEdit {
            start_byte: at,
            old_end_byte: at,
            new_end_byte: at + ins.len(),
            start_position: sp,
            old_end_position: sp,
            new_end_position: ep,
        });
        let t = Instant::now();
        let re = oomlint::engine::reparse(&text, Some(&tree)).unwrap();
        let inc = t.elapsed();
        let err = re.root_node().has_error();
        let t = Instant::now();
        let full = if err { Some(oomlint::engine::parse(&text).unwrap()) } else { None };
        let fe = t.elapsed();
        println!(
            "{:?} inc {:?} err {} full {:?}",
            &text[anchor + 9..anchor + 9 + (at - anchor - 9 + ins.len()).min(line.len())],
            inc,
            err,
            fe
        );
        tree = full.unwrap_or(re);
    }
}
