//! A counting global allocator for the "allocates nothing" tests: it forwards every
//! call to the system allocator and, only on a thread that switched counting on,
//! counts allocations and reallocations. A test binary installs it with
//! `#[global_allocator] static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;`.

#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

pub struct Counting;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    if ON.with(|on| on.get()) {
        ALLOCS.with(|n| n.set(n.get() + 1));
    }
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counters are
// const-initialised thread-locals without destructors, so touching them never
// allocates or re-enters the allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: forwarded with the caller's arguments.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Starts counting on this thread from zero.
pub fn start() {
    ALLOCS.with(|n| n.set(0));
    ON.with(|on| on.set(true));
}

/// Stops counting on this thread.
pub fn stop() {
    ON.with(|on| on.set(false));
}

/// Allocations counted on this thread since the last `start`.
pub fn counted() -> u64 {
    ALLOCS.with(|n| n.get())
}

/// Allocations made by `f` on this thread.
pub fn count<R>(f: impl FnOnce() -> R) -> (R, u64) {
    start();
    let r = f();
    stop();
    (r, counted())
}
