//! libFuzzer's driver of target (e) the engine's public API on call sequences: hands each input to
//! `poolc_fuzz::engine::run`, which holds the properties; nothing else here.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = poolc_fuzz::engine::run(data);
});
