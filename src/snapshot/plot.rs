//! The timeline of allocated memory as a standalone SVG (or an HTML page holding it and
//! the table of lines): the heaviest lines as stacked bands, the rest in grey, the
//! out-of-memory event or the peak marked.

use super::report::Report;
use crate::explain::human;
use std::fmt::Write as _;
use std::path::Path;

const COLOURS: [&str; 8] = ["#4e79a7", "#f28e2c", "#e15759", "#76b7b2", "#59a14f", "#edc949", "#af7aa1", "#ff9da7"];
const REST_COLOUR: &str = "#bab0ab";
const WIDTH: f64 = 1100.0;
const HEIGHT: f64 = 540.0;
const LEFT: f64 = 90.0;
const TOP: f64 = 56.0;
const PLOT_W: f64 = 660.0;
const PLOT_H: f64 = 420.0;

/// Writes an SVG, or an HTML page when the name ends in `.html` / `.htm`.
pub fn write(report: &Report, name: &str, path: &Path) -> std::io::Result<()> {
    let html = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
    let text = if html { page(report, name) } else { svg(report, name) };
    // Written whole to a temporary file first, so a failed write leaves no half a chart.
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut file, text.as_bytes())?;
    let file = file.persist(path).map_err(|e| e.error)?;
    // A chart is for sharing: readable by all, as a file the shell would create.
    #[cfg(unix)]
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
    Ok(())
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn label(line: &Option<(String, u32, String)>) -> String {
    match line {
        Some((file, number, function)) => format!("{file}:{number} {function}"),
        None => "everything else".to_string(),
    }
}

fn shorten(text: &str, max: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max {
        return text.to_string();
    }
    let tail: String = chars[chars.len() - (max - 1)..].iter().collect();
    format!("…{tail}")
}

/// A round step for the axis in the unit the top is shown in (KiB, MiB, GiB): 1, 2, 2.5
/// or 5 times a power of ten of that unit, about five ticks up to the top.
fn tick_step(top: f64) -> f64 {
    let unit = 1024f64.powi((top.max(1.0).log(1024.0).floor() as i32).clamp(0, 4));
    let rough = top / 5.0 / unit;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * magnitude).find(|s| *s >= rough).unwrap_or(rough);
    step * unit
}

pub fn svg(report: &Report, name: &str) -> String {
    let mut out = String::new();
    let points = &report.timeline;
    let last_event = points.last().map(|p| p.0).unwrap_or(0).max(1) as f64;
    let top_bytes = (report.peak_bytes.max(1) as f64) * 1.08;
    let x = |event: usize| LEFT + PLOT_W * event as f64 / last_event;
    let y = |bytes: f64| TOP + PLOT_H - PLOT_H * bytes / top_bytes;
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="24" font-size="16" font-weight="bold">Allocated memory, {} ({} events): {}</text>"#,
        escape(&report.device),
        report.events,
        escape(&shorten(name, 60))
    );
    let _ = writeln!(
        out,
        r##"<text x="{LEFT}" y="42" fill="#555">the heaviest lines of your code at the {} as stacked bands; library frames folded into the line that called them</text>"##,
        if report.oom.is_some() { "out-of-memory event" } else { "peak" }
    );
    // Axes and grid.
    let step = tick_step(top_bytes);
    let mut tick = 0.0;
    while tick <= top_bytes {
        let ty = y(tick);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" x2="{}" y1="{ty:.1}" y2="{ty:.1}" stroke="#e5e5e5"/><text x="{}" y="{:.1}" text-anchor="end" fill="#333">{}</text>"##,
            LEFT + PLOT_W,
            LEFT - 6.0,
            ty + 4.0,
            escape(&human(tick))
        );
        tick += step;
    }
    // Stacked bands, the heaviest line at the bottom.
    let mut base = vec![0f64; points.len()];
    for (b, band) in report.bands.iter().enumerate() {
        if band.values.iter().all(|v| *v == 0) {
            continue;
        }
        let colour = if band.line.is_some() { COLOURS[b % COLOURS.len()] } else { REST_COLOUR };
        let mut upper = Vec::new();
        let mut lower = Vec::new();
        // Memory changes in steps: each point holds from its event until the next one.
        let mut previous: Option<(f64, f64)> = None;
        for (i, &(event, _)) in points.iter().enumerate() {
            let value = band.values.get(i).copied().unwrap_or(0) as f64;
            if let Some((low, high)) = previous {
                lower.push(format!("{:.1},{:.1}", x(event), y(low)));
                upper.push(format!("{:.1},{:.1}", x(event), y(high)));
            }
            lower.push(format!("{:.1},{:.1}", x(event), y(base[i])));
            upper.push(format!("{:.1},{:.1}", x(event), y(base[i] + value)));
            previous = Some((base[i], base[i] + value));
            base[i] += value;
        }
        if points.len() == 1 {
            // A dump without a trace: one moment, drawn as a bar across the plot.
            lower.push(format!("{:.1},{:.1}", LEFT + PLOT_W, y(base[0] - band.values[0] as f64)));
            upper.push(format!("{:.1},{:.1}", LEFT + PLOT_W, y(base[0])));
            lower[0] = format!("{LEFT:.1},{:.1}", y(base[0] - band.values[0] as f64));
            upper[0] = format!("{LEFT:.1},{:.1}", y(base[0]));
        }
        lower.reverse();
        let _ = writeln!(
            out,
            r#"<polygon points="{} {}" fill="{colour}" fill-opacity="0.9"><title>{}</title></polygon>"#,
            upper.join(" "),
            lower.join(" "),
            escape(&label(&band.line))
        );
    }
    let _ = writeln!(
        out,
        r##"<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{}" stroke="#333"/><line x1="{LEFT}" x2="{}" y1="{}" y2="{}" stroke="#333"/>"##,
        TOP + PLOT_H,
        LEFT + PLOT_W,
        TOP + PLOT_H,
        TOP + PLOT_H
    );
    let _ = writeln!(
        out,
        r##"<text x="{}" y="{}" text-anchor="middle" fill="#333">event</text><text x="{LEFT}" y="{}" text-anchor="middle" fill="#333">0</text><text x="{}" y="{}" text-anchor="end" fill="#333">{}</text>"##,
        LEFT + PLOT_W / 2.0,
        TOP + PLOT_H + 32.0,
        TOP + PLOT_H + 16.0,
        LEFT + PLOT_W,
        TOP + PLOT_H + 16.0,
        last_event as usize
    );
    // The moment the report describes.
    let (event, caption, colour) = match (&report.oom, report.moment) {
        (Some(oom), _) => {
            (oom.event, format!("out of memory: {} requested", human(oom.requested_bytes as f64)), "#d62728")
        }
        (None, super::replay::Moment::Peak(i)) => (i, format!("peak {}", human(report.peak_bytes as f64)), "#333"),
        _ => (0, String::new(), "#333"),
    };
    if !caption.is_empty() {
        let mx = x(event);
        let anchor = if mx > LEFT + PLOT_W * 0.6 { "end" } else { "start" };
        let dx = if anchor == "end" { -4.0 } else { 4.0 };
        let _ = writeln!(
            out,
            r#"<line x1="{mx:.1}" x2="{mx:.1}" y1="{TOP}" y2="{}" stroke="{colour}" stroke-width="1.5" stroke-dasharray="5,3"/><text x="{:.1}" y="{}" text-anchor="{anchor}" fill="{colour}" font-weight="bold">{}</text>"#,
            TOP + PLOT_H,
            mx + dx,
            TOP + 12.0,
            escape(&caption)
        );
    }
    // Legend: each band with its bytes at the moment.
    let lx = LEFT + PLOT_W + 24.0;
    let _ = writeln!(
        out,
        r#"<text x="{lx}" y="{}" font-weight="bold">at the {}</text>"#,
        TOP + 4.0,
        if report.oom.is_some() { "out-of-memory event" } else { "peak" }
    );
    let mut row = 0;
    for (b, band) in report.bands.iter().enumerate() {
        let bytes = match &band.line {
            Some((file, number, function)) => report
                .lines
                .iter()
                .find(|l| (&l.file, l.line, &l.function) == (file, *number, function))
                .map(|l| l.bytes)
                .unwrap_or(0),
            None => report.allocated_bytes.saturating_sub(report.lines.iter().take(b).map(|l| l.bytes).sum()),
        };
        if bytes == 0 && band.line.is_none() {
            continue;
        }
        let colour = if band.line.is_some() { COLOURS[b % COLOURS.len()] } else { REST_COLOUR };
        let ly = TOP + 22.0 + row as f64 * 40.0;
        let _ = writeln!(
            out,
            r##"<rect x="{lx}" y="{ly}" width="14" height="14" fill="{colour}"/><text x="{}" y="{}">{}</text><text x="{}" y="{}" fill="#555">{}</text>"##,
            lx + 20.0,
            ly + 11.0,
            escape(&shorten(&label(&band.line), 40)),
            lx + 20.0,
            ly + 27.0,
            escape(&human(bytes as f64))
        );
        row += 1;
    }
    out.push_str("</svg>\n");
    out
}

pub fn page(report: &Report, name: &str) -> String {
    let mut rows = String::new();
    let total = report.allocated_bytes.max(1) as f64;
    for l in &report.lines {
        let categories: Vec<String> = l.categories.iter().map(|(c, b)| format!("{c} {}", human(*b as f64))).collect();
        let _ = writeln!(
            rows,
            "<tr><td class=n>{}</td><td class=n>{:.1}%</td><td>{}:{}</td><td>{}</td><td>{}</td></tr>",
            escape(&human(l.bytes as f64)),
            100.0 * l.bytes as f64 / total,
            escape(&l.file),
            l.line,
            escape(&l.function),
            escape(&categories.join(", "))
        );
    }
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Memory snapshot: {title}</title>\n<style>body{{font-family:\
         sans-serif;margin:24px}}table{{border-collapse:collapse}}td,th{{padding:3px 10px;border-bottom:1px solid #ddd;\
         text-align:left}}td.n{{text-align:right;font-variant-numeric:tabular-nums}}</style></head>\n<body>\n{svg}<h2>Live \
         by line of your code</h2>\n<table><tr><th>bytes</th><th>share</th><th>line</th><th>function</th><th>categories</th>\
         </tr>\n{rows}</table>\n</body></html>\n",
        title = escape(name),
        svg = svg(report, name),
    )
}
