//! `index.html` of `spinlab profile`, in the report's style (inline CSS and SVG, nothing
//! fetched): per process, the top sites as bars of total wait, then each site with its wait
//! and hold histograms, its counts and its stack.

use super::file::{Histogram, Profile, Site};
use super::{duration, share};
use crate::reading::plot::{self, Axis, Bar, Scale};
use crate::report::escape::escape;
use crate::report::html::STYLE;

/// The whole page for the processes of one run; `top` sites per process.
pub fn page(command: &str, profiles: &[Profile], top: usize) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n",
    );
    out.push_str(&format!(
        "<title>spinlab profile: {}</title>\n<style>{STYLE}\nol.stack {{ font-family: monospace; font-size: 13px; }}\n</style>\n</head>\n<body>\n",
        escape(command)
    ));
    out.push_str("<h1>spinlab profile</h1>\n");
    out.push_str(&format!("<p class=\"sub\"><code>{}</code></p>\n", escape(command)));
    if profiles.is_empty() {
        out.push_str(
            "<p class=\"missing\">No process wrote a profile: the program took no lock, condition variable, \
             barrier or reader-writer lock.</p>\n",
        );
    }
    if profiles.len() > 1 {
        out.push_str("<nav>");
        for p in profiles {
            out.push_str(&format!("<a href=\"#pid-{}\">{} (pid {})</a>", p.pid, escape(&short(&p.program)), p.pid));
        }
        out.push_str("</nav>\n");
    }
    for p in profiles {
        out.push_str(&process(p, top));
    }
    out.push_str(
        "<p class=\"sub\">Written by <code>spinlab profile</code>. Each process's numbers are in \
         raw/profile.PID.json (format spinlab.profile/1, see docs/profile.md); profile.pb.gz next to this \
         file opens in <code>go tool pprof</code>.</p>\n</body>\n</html>\n",
    );
    out
}

fn short(path: &str) -> String {
    std::path::Path::new(path).file_name().map_or(path.to_string(), |n| n.to_string_lossy().into_owned())
}

fn process(p: &Profile, top: usize) -> String {
    let mut out = format!("<section id=\"pid-{}\">\n<h2>{} (pid {})</h2>\n", p.pid, escape(&short(&p.program)), p.pid);
    let waited: u64 = p.sites.iter().map(|s| s.wait.total_ns).sum();
    out.push_str(&format!(
        "<p class=\"sub\"><code>{}</code> &middot; lock {} &middot; {:.2} s &middot; {} site(s), {} object(s) &middot; \
         {} waited in all; holds timed 1 in {}</p>\n",
        escape(&p.argv.join(" ")),
        escape(&p.lock),
        p.seconds(),
        p.sites.len(),
        p.sites.iter().map(|s| s.objects).sum::<u64>(),
        duration(waited),
        p.hold_sample_every,
    ));
    if p.untracked_acquisitions > 0 {
        out.push_str(&format!(
            "<p class=\"note\">{} acquisitions of objects beyond the library's table are not counted.</p>\n",
            p.untracked_acquisitions
        ));
    }
    let shown: Vec<&Site> = p.sites.iter().take(top).collect();
    let contended: Vec<&&Site> = shown.iter().filter(|s| s.wait.total_ns > 0).collect();
    if contended.is_empty() {
        out.push_str("<p class=\"missing\">No site was contended: nothing waited.</p>\n");
    } else {
        let bars: Vec<Bar> = contended
            .iter()
            .enumerate()
            .map(|(i, s)| Bar {
                label: format!("{}. {}", i + 1, s.name()),
                value: s.wait.total_ns as f64 / 1e6,
                color: 0,
            })
            .collect();
        let x = Axis::numeric("total wait (ms)", Scale::Linear, bars.iter().map(|b| b.value), true);
        match plot::hbars("where the program waits", &x, &bars, &[]) {
            Ok(svg) => out.push_str(&format!(
                "<figure><div class=\"panel\">{svg}\n<figcaption>Total wait of the contended acquisitions at each \
                 site (all its objects), most first.</figcaption></div></figure>\n"
            )),
            Err(e) => out.push_str(&format!("<p class=\"note\">No chart: {}</p>\n", escape(&e))),
        }
    }
    out.push_str(&summary_table(&shown, p));
    for (i, s) in shown.iter().enumerate() {
        out.push_str(&site(p.pid, i + 1, s));
    }
    if p.sites.len() > shown.len() {
        out.push_str(&format!("<p class=\"sub\">{} more site(s) in the JSON file.</p>\n", p.sites.len() - shown.len()));
    }
    out.push_str("</section>\n");
    out
}

fn summary_table(sites: &[&Site], p: &Profile) -> String {
    let mut out = String::from(
        "<table>\n<tr><th>#</th><th>site</th><th>kind</th><th>objects</th><th>acquisitions</th><th>contended</th>\
         <th>owner changes</th><th>total wait</th><th>wait p50 / p99</th><th>hold p99</th><th>spin / sleep</th>\
         <th>mean waiters</th></tr>\n",
    );
    for (i, s) in sites.iter().enumerate() {
        let split = match (s.spin_ns, s.sleep_ns) {
            (Some(spin), Some(sleep)) if s.wait.total_ns > 0 => {
                format!("{} / {}", share(spin, s.wait.total_ns), share(sleep, s.wait.total_ns))
            }
            (Some(_), Some(_)) => "-".to_string(),
            _ => "glibc's: not seen".to_string(),
        };
        out.push_str(&format!(
            "<tr><td>{}</td><td><a href=\"#site-{}-{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{} / {}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            i + 1,
            p.pid,
            i + 1,
            escape(&s.name()),
            escape(&s.kind),
            s.objects,
            s.acquisitions,
            share(s.contended, s.acquisitions),
            s.owner_changes,
            duration(s.wait.total_ns),
            percentile(&s.wait, s.wait.p50_ns),
            percentile(&s.wait, s.wait.p99_ns),
            percentile(&s.hold, s.hold.p99_ns),
            split,
            s.mean_waiters().map_or("-".to_string(), |w| format!("{w:.2}")),
        ));
    }
    out.push_str("</table>\n");
    out
}

fn percentile(h: &Histogram, value: u64) -> String {
    if h.count == 0 {
        "-".to_string()
    } else {
        duration(value)
    }
}

fn site(pid: u32, n: usize, s: &Site) -> String {
    let mut out = format!("<h3 id=\"site-{pid}-{n}\">{n}. {}</h3>\n", escape(&s.name()));
    let mut facts = vec![
        format!("{} {} object(s)", s.objects, escape(&s.kind)),
        format!("{} acquisitions, {} contended", s.acquisitions, s.contended),
        format!("stack from its {}", if s.site == "init" { "init call" } else { "first contended acquisition" }),
    ];
    if let (Some(w), Some(e)) = (s.wakes, s.wakes_empty) {
        facts.push(format!("{w} wake-ups sent, {e} found nobody"));
    }
    if s.max_waiters > 0 {
        facts.push(format!("at most {} waiting at once", s.max_waiters));
    }
    if let Some(c) = &s.cond {
        facts.push(format!(
            "{} waits ({} timed, {} timed out, spurious {}), {} signals, {} broadcasts",
            c.waits,
            c.timed_waits,
            c.timed_out,
            c.spurious.map_or("not known".to_string(), |n| n.to_string()),
            c.signals,
            c.broadcasts
        ));
    }
    if let Some(r) = &s.rwlock {
        facts.push(format!(
            "{} reads ({} contended, {} waited), {} writes ({} contended, {} waited)",
            r.reads,
            r.read_contended,
            duration(r.read_wait_ns),
            r.writes,
            r.write_contended,
            duration(r.write_wait_ns)
        ));
    }
    out.push_str(&format!("<p>{}.</p>\n", facts.join(" &middot; ")));
    let hists: Vec<(&str, &Histogram)> =
        [("wait", &s.wait), ("hold (sampled)", &s.hold)].into_iter().filter(|(_, h)| h.count > 0).collect();
    if !hists.is_empty() {
        out.push_str(&histograms(&hists));
    }
    if s.stack.is_empty() {
        out.push_str("<p class=\"missing\">No stack: made by a static initialiser and never contended.</p>\n");
    } else {
        out.push_str("<ol class=\"stack\">\n");
        for frame in &s.stack {
            let module = frame.module.as_deref().map(short).unwrap_or_default();
            out.push_str(&format!(
                "<li>{} <span class=\"sub\">{}</span></li>\n",
                escape(&frame.describe()),
                escape(&module)
            ));
        }
        out.push_str("</ol>\n");
    }
    out
}

/// The histograms of one site over the same log2 buckets.
fn histograms(hists: &[(&str, &Histogram)]) -> String {
    // Every bucket from the shortest to the longest, the empty ones too, so that equal
    // widths are equal factors of two.
    let seen = hists.iter().flat_map(|(_, h)| h.buckets.iter().map(|b| b.0));
    let (lo, hi) = seen.fold((u64::MAX, 0), |(lo, hi), u| (lo.min(u), hi.max(u)));
    let uppers: Vec<u64> =
        std::iter::successors((lo <= hi).then_some(lo), |u| u.checked_mul(2).filter(|u| *u <= hi)).collect();
    let categories: Vec<String> = uppers.iter().map(|&u| format!("<{}", duration(u))).collect();
    let groups: Vec<(String, Vec<Option<f64>>)> = hists
        .iter()
        .map(|(name, h)| {
            let values =
                uppers.iter().map(|u| h.buckets.iter().find(|b| b.0 == *u).map(|b| b.1 as f64).or(Some(0.0))).collect();
            (name.to_string(), values)
        })
        .collect();
    let y = Axis::numeric("count", Scale::Linear, groups.iter().flat_map(|(_, v)| v.iter().flatten().copied()), true);
    match plot::grouped_bars("", &categories, "duration (log2 buckets)", &y, &groups, None) {
        Ok(svg) => format!("<div class=\"panel\">{svg}</div>\n"),
        Err(e) => format!("<p class=\"note\">No histogram: {}</p>\n", escape(&e)),
    }
}
