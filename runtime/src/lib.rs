//! `poolrt`: the Pool runtime. It owns pool state, queues and the reference host, and
//! takes compiled policies as function pointers; it must never parse or compile a spec.

pub mod policy;
