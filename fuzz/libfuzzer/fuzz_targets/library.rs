//! libFuzzer's driver of target (d) the shared-object loader on mutated libraries: hands each input to
//! `poolc_fuzz::library::run`, which holds the properties; nothing else here.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = poolc_fuzz::library::run(data);
});
