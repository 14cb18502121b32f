//! Memory flat in trace length (docs/HOST.md, "Memory"): a replay that reads its
//! sessions one at a time keeps only the live ones, so ten times the sessions take
//! about the same peak heap. A tracking global allocator measures the peak of live
//! heap bytes on this thread during each replay; the same replay of the whole
//! workload, held in memory, shows the measure can tell the difference.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod host_support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use host_support::*;
use poolrt::host::{Host, IterTime, RunOptions};
use poolrt::trace::{self, Generator, SyntheticParams};

struct Tracking;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn add(n: isize) {
    // `try_with`: the thread's locals may be gone while it exits.
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + n);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counters are
// const-initialised thread-locals without destructors, so touching them never
// allocates or re-enters the allocator.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as isize));
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size as isize - layout.size() as isize);
        // SAFETY: forwarded with the caller's arguments.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

/// Peak live heap bytes above the start, while `f` runs.
fn peak(f: impl FnOnce()) -> isize {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    f();
    PEAK.with(Cell::get) - base
}

/// examples/vllm.pool's shape, small and fast enough that sessions do not pile up.
fn config() -> poolrt::host::HostConfig {
    vllm(
        512,
        16,
        poolrt::host::StepConfig {
            time: IterTime::Fixed(0.005),
            ..engine(2048, 64, None)
        },
    )
}

/// A replay of a workload held whole (`Host::new`), for the comparisons below.
fn replay_whole(w: &trace::Workload) {
    Host::new(config(), w)
        .unwrap()
        .run(RunOptions::default())
        .unwrap();
}

fn streamed(n: usize) -> isize {
    peak(|| {
        let g = Generator::new(n, 3, SyntheticParams::default());
        let r = Host::streaming(config(), Box::new(g))
            .unwrap()
            .run(RunOptions::default())
            .unwrap();
        assert_eq!(r.finished, n as u64);
    })
}

#[test]
fn a_streamed_replay_of_ten_times_the_sessions_peaks_at_about_the_same_heap() {
    let small = streamed(3_000);
    let large = streamed(30_000);
    assert!(
        large * 4 < small * 5,
        "peak heap: {small} bytes for 3,000 sessions, {large} for 30,000"
    );
    // The measure sees a workload held whole: the same 30,000 sessions, generated up
    // front, take well over the streamed peak.
    let whole = peak(|| replay_whole(&trace::synthetic(30_000, 3)));
    assert!(
        whole > 2 * large,
        "peak heap: {whole} bytes for 30,000 sessions held whole, {large} streamed"
    );
}

/// `n` sessions of our JSONL in a file: the synthetic sessions without their content
/// runs (content identities are the one part of reading that grows with a trace's
/// distinct content: docs/HOST.md "Memory").
fn jsonl_file(n: usize) -> std::path::PathBuf {
    let mut text = String::new();
    for s in trace::synthetic(n, 3).sessions {
        text.push_str(&format!(
            "{{\"arrival\": {}, \"prompt\": {}, \"output\": {}}}\n",
            s.arrival, s.prompt, s.output
        ));
    }
    let path = std::env::temp_dir().join(format!(
        "poolc-host-memory-{}-{n}.jsonl",
        std::process::id()
    ));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_trace_file_read_line_by_line_peaks_at_about_the_same_heap_for_ten_times_the_lines() {
    let read = |path: &std::path::Path, n: usize| {
        peak(|| {
            let reader = trace::open_path(path, None).unwrap();
            let r = Host::streaming(config(), Box::new(reader))
                .unwrap()
                .run(RunOptions::default())
                .unwrap();
            assert_eq!(r.finished, n as u64);
        })
    };
    let (a, b) = (jsonl_file(3_000), jsonl_file(30_000));
    let small = read(&a, 3_000);
    let large = read(&b, 30_000);
    assert!(
        large * 4 < small * 5,
        "peak heap: {small} bytes for 3,000 lines, {large} for 30,000"
    );
    let whole = peak(|| replay_whole(&trace::read_path(&b, None).unwrap()));
    assert!(
        whole > 2 * large,
        "peak heap: {whole} bytes for 30,000 lines read whole, {large} line by line"
    );
    let _ = (std::fs::remove_file(a), std::fs::remove_file(b));
}
