//! The profiles as one pprof file (`profile.proto` of github.com/google/pprof, gzipped), the
//! format `go tool pprof` and other pprof viewers read: one sample per site and process, with
//! the site's stack, two values as Go's mutex profile has them (`contentions`, `delay` in ns)
//! and labels naming the object kind, the lock and the process.

use super::file::{Profile, Site};
use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;
use std::collections::HashMap;
use std::io::Write;

/// The messages of profile.proto that spinlab writes, with its field numbers.
mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(int64, tag = "1")]
        pub key: i64,
        #[prost(int64, tag = "2")]
        pub str: i64,
        #[prost(int64, tag = "3")]
        pub num: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Mapping {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        #[prost(int64, tag = "5")]
        pub filename: i64,
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
        #[prost(bool, tag = "8")]
        pub has_filenames: bool,
        #[prost(bool, tag = "9")]
        pub has_line_numbers: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        #[prost(uint64, tag = "3")]
        pub address: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
    }
}

/// Builds the tables as samples are added: strings, functions, mappings and locations each
/// once, by value.
struct Builder {
    out: proto::Profile,
    strings: HashMap<String, i64>,
    functions: HashMap<(String, String), u64>,
    mappings: HashMap<String, usize>,
    locations: HashMap<(u32, u64), u64>,
}

impl Builder {
    fn new() -> Builder {
        let mut b = Builder {
            out: proto::Profile::default(),
            strings: HashMap::new(),
            functions: HashMap::new(),
            mappings: HashMap::new(),
            locations: HashMap::new(),
        };
        // String 0 is always the empty string.
        b.string("");
        b
    }

    fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.out.string_table.len() as i64;
        self.out.string_table.push(s.to_string());
        self.strings.insert(s.to_string(), i);
        i
    }

    fn value_type(&mut self, kind: &str, unit: &str) -> proto::ValueType {
        proto::ValueType { r#type: self.string(kind), unit: self.string(unit) }
    }

    fn function(&mut self, name: &str, file: &str) -> u64 {
        let key = (name.to_string(), file.to_string());
        if let Some(&id) = self.functions.get(&key) {
            return id;
        }
        let id = self.out.function.len() as u64 + 1;
        let (name, filename) = (self.string(name), self.string(file));
        self.out.function.push(proto::Function { id, name, system_name: name, filename });
        self.functions.insert(key, id);
        id
    }

    /// The mapping of `module`, widened to cover `address`.
    fn mapping(&mut self, module: &str, address: u64, offset: u64, symbolised: bool) -> u64 {
        let index = match self.mappings.get(module) {
            Some(&i) => i,
            None => {
                let filename = self.string(module);
                let start = address.saturating_sub(offset);
                self.out.mapping.push(proto::Mapping {
                    id: self.out.mapping.len() as u64 + 1,
                    memory_start: start,
                    memory_limit: address + 1,
                    file_offset: 0,
                    filename,
                    has_functions: true,
                    has_filenames: true,
                    has_line_numbers: true,
                });
                self.mappings.insert(module.to_string(), self.out.mapping.len() - 1);
                self.out.mapping.len() - 1
            }
        };
        let m = &mut self.out.mapping[index];
        m.memory_start = m.memory_start.min(address.saturating_sub(offset));
        m.memory_limit = m.memory_limit.max(address + 1);
        if !symbolised {
            // pprof then knows it may symbolise this binary's addresses itself.
            m.has_functions = false;
            m.has_filenames = false;
            m.has_line_numbers = false;
        }
        m.id
    }

    /// The locations of `site`'s stack in process `pid`, innermost first; a site without a
    /// stack gets one location naming what it groups.
    fn stack(&mut self, pid: u32, site: &Site) -> Vec<u64> {
        if site.stack.is_empty() {
            let function = self.function(&site.name(), "");
            let id = self.out.location.len() as u64 + 1;
            self.out.location.push(proto::Location {
                id,
                mapping_id: 0,
                address: 0,
                line: vec![proto::Line { function_id: function, line: 0 }],
            });
            return vec![id];
        }
        site.stack
            .iter()
            .map(|frame| {
                if let Some(&id) = self.locations.get(&(pid, frame.address)) {
                    return id;
                }
                let symbolised = frame.function.is_some();
                let mapping_id = match (&frame.module, frame.offset) {
                    (Some(m), Some(off)) => self.mapping(m, frame.address, off, symbolised),
                    _ => 0,
                };
                let line = match &frame.function {
                    Some(f) => {
                        let function_id = self.function(f, frame.file.as_deref().unwrap_or(""));
                        vec![proto::Line { function_id, line: frame.line.map_or(0, i64::from) }]
                    }
                    None => Vec::new(),
                };
                let id = self.out.location.len() as u64 + 1;
                self.out.location.push(proto::Location { id, mapping_id, address: frame.address, line });
                self.locations.insert((pid, frame.address), id);
                id
            })
            .collect()
    }
}

/// The profiles of one run as a gzipped `profile.proto`.
pub fn encode(profiles: &[Profile]) -> Vec<u8> {
    let mut b = Builder::new();
    let sample_type = vec![b.value_type("contentions", "count"), b.value_type("delay", "nanoseconds")];
    b.out.sample_type = sample_type;
    b.out.period_type = Some(b.value_type("contentions", "count"));
    b.out.period = 1;
    b.out.default_sample_type = 1;
    let comment = b.string("spinlab profile: contended acquisitions and their wait, per lock site");
    b.out.comment = vec![comment];
    let start = profiles.iter().map(|p| p.started_ns).min().unwrap_or(0);
    let end = profiles.iter().map(|p| p.ended_ns).max().unwrap_or(0);
    b.out.duration_nanos = end.saturating_sub(start) as i64;
    b.out.time_nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
        .saturating_sub(b.out.duration_nanos);
    let (kind_key, lock_key, pid_key, program_key) =
        (b.string("kind"), b.string("lock"), b.string("pid"), b.string("program"));
    for profile in profiles {
        for site in profile.sites.iter().filter(|s| s.contended > 0) {
            let location_id = b.stack(profile.pid, site);
            let label = vec![
                proto::Label { key: kind_key, str: b.string(&site.kind), num: 0 },
                proto::Label { key: lock_key, str: b.string(&profile.lock), num: 0 },
                proto::Label { key: program_key, str: b.string(&profile.program), num: 0 },
                proto::Label { key: pid_key, str: 0, num: i64::from(profile.pid) },
            ];
            let value = vec![site.contended as i64, site.wait.total_ns as i64];
            b.out.sample.push(proto::Sample { location_id, value, label });
        }
    }
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    // Writing into a Vec cannot fail.
    let _ = gz.write_all(&b.out.encode_to_vec());
    gz.finish().unwrap_or_default()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::profile::file::{Frame, Histogram};
    use flate2::read::GzDecoder;
    use std::io::Read;

    pub(crate) fn site(kind: &str, stack: Vec<Frame>, contended: u64, wait_ns: u64) -> Site {
        Site {
            kind: kind.into(),
            site: if stack.is_empty() { "none".into() } else { "init".into() },
            stack,
            objects: 1,
            acquisitions: contended * 2,
            contended,
            owner_changes: contended,
            wait: Histogram { count: contended, total_ns: wait_ns, ..Histogram::default() },
            hold: Histogram::default(),
            spin_ns: None,
            yield_ns: None,
            sleep_ns: None,
            wakes: None,
            wakes_empty: None,
            max_waiters: 1,
            waiter_ns: wait_ns,
            contended_ns: wait_ns,
            cond: None,
            rwlock: None,
            top_objects: Vec::new(),
        }
    }

    fn frame(address: u64, function: &str, line: u32) -> Frame {
        Frame {
            address,
            module: Some("/bin/prog".into()),
            offset: Some(address - 0x1000),
            function: Some(function.into()),
            file: Some("prog.c".into()),
            line: Some(line),
        }
    }

    fn profile(sites: Vec<Site>) -> Profile {
        Profile {
            format: crate::profile::file::FORMAT.into(),
            pid: 42,
            parent_pid: 1,
            program: "/bin/prog".into(),
            argv: vec!["prog".into()],
            lock: "mcs:futex".into(),
            started_ns: 1_000,
            ended_ns: 5_000,
            hold_sample_every: 16,
            untracked_acquisitions: 0,
            sites,
        }
    }

    #[test]
    fn samples_carry_the_stacks_and_share_their_frames() {
        let shared = frame(0x1100, "main", 9);
        let sites = vec![
            site("mutex", vec![frame(0x1200, "hot", 20), shared.clone()], 7, 7_000),
            site("rwlock", vec![frame(0x1300, "table", 30), shared], 3, 900),
            site("mutex", Vec::new(), 2, 50),
            site("cond", vec![frame(0x1400, "idle", 40)], 0, 0),
        ];
        let bytes = encode(&[profile(sites)]);
        let mut raw = Vec::new();
        GzDecoder::new(&bytes[..]).read_to_end(&mut raw).unwrap();
        let p = proto::Profile::decode(&raw[..]).unwrap();
        let s = |i: i64| p.string_table[i as usize].as_str();
        assert_eq!(s(0), "");
        let types: Vec<_> = p.sample_type.iter().map(|t| (s(t.r#type), s(t.unit))).collect();
        assert_eq!(types, [("contentions", "count"), ("delay", "nanoseconds")]);
        assert_eq!(p.sample.len(), 3, "the site never contended has no sample");
        assert_eq!(p.sample[0].value, [7, 7_000]);
        assert_eq!(p.sample[1].value, [3, 900]);
        // main's frame is one location, shared by both stacks.
        assert_eq!(p.sample[0].location_id[1], p.sample[1].location_id[1]);
        assert_eq!(p.location.len(), 4, "hot, main, table and the siteless group");
        let name_of = |loc: u64| {
            let l = &p.location[loc as usize - 1];
            let f = &p.function[l.line[0].function_id as usize - 1];
            (s(f.name).to_string(), l.line[0].line)
        };
        assert_eq!(name_of(p.sample[0].location_id[0]), ("hot".to_string(), 20));
        assert!(name_of(p.sample[2].location_id[0]).0.contains("never contended"));
        let kinds: Vec<_> = p.sample.iter().map(|x| s(x.label[0].str)).collect();
        assert_eq!(kinds, ["mutex", "rwlock", "mutex"]);
        assert_eq!(p.sample[0].label[3].num, 42);
        assert_eq!(p.mapping.len(), 1);
        assert_eq!((p.mapping[0].memory_start, p.mapping[0].memory_limit), (0x1000, 0x1301));
        assert_eq!(p.duration_nanos, 4_000);
    }
}
