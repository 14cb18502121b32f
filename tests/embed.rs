//! Runs examples/embed.rs, the embedding example a reader copies, and checks what it
//! does against a walk through R5–R14 done by hand (in the comments below).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

#[path = "../examples/embed.rs"]
mod embed;

use poolrt::{Event, SessionId, Units};

#[test]
fn embedding_example_behaves_as_worked_out_by_hand() {
    let out = embed::run();
    let events: Vec<&Event> = out.log.iter().map(|r| &r.event).collect();
    let s = SessionId;
    let admit = |i, hit, units| Event::Admit {
        session: s(i),
        hit: Units(hit),
        units: Units(units),
    };
    // t=0: s0 admitted (2 blocks). t=1: s1 selected first (priority 0, serial 1): its
    // first two blocks are s0's, shared (R7), so it hits 32 and needs one more block;
    // s2 (3 blocks) then finds one block free and blocks the queue (R8).
    // t=2: s0 releases, but s1 still holds both blocks: nothing is cached (R14).
    // t=3: s1 releases its three blocks as one entry; s2 needs three blocks with one
    // free, so two are evicted from that entry's tail (R10): run 2's block, then the
    // second block of run 1.
    assert_eq!(events[0], &Event::Enqueue { session: s(0) });
    assert_eq!(events[1], &admit(0, 0, 32));
    assert!(events.contains(&&admit(1, 32, 48)));
    assert!(events.contains(&&Event::Release {
        session: s(0),
        cached: Units(0)
    }));
    assert!(events.contains(&&Event::Release {
        session: s(1),
        cached: Units(48)
    }));
    let evicted: Vec<(u64, u64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Evict { key, .. } => Some((key.run.0, key.offset)),
            _ => None,
        })
        .collect();
    assert_eq!(evicted, vec![(2, 15), (1, 31)], "tail block first");
    assert_eq!(events.last(), Some(&&admit(2, 0, 48)));
    assert_eq!(out.allocated, Units(48));
    assert_eq!(out.cached, Units(16));
}
