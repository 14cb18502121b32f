//! libFuzzer's driver of target (c) each trace reader on any file: hands each input to
//! `poolc_fuzz::traces::run`, which holds the properties; nothing else here.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = poolc_fuzz::traces::run(data);
});
