//! What tools/tests/model.rs and model_time.rs share: a shipped config.json read by
//! the library, and a deployment on a GPU at a TP degree with every other option at
//! its default.

use std::path::Path;

use poolc_tools::model::config::{self, ModelShape};
use poolc_tools::model::{Deployment, find_gpu};

/// examples/models/NAME/config.json, read.
pub fn shipped(name: &str) -> ModelShape {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/models")
        .join(name)
        .join("config.json");
    config::read_path(&path).unwrap()
}

/// GPU `gpu` at tensor parallelism `tp`, the rest at [`Deployment::on`]'s defaults.
pub fn on(gpu: &str, tp: u64) -> Deployment {
    Deployment {
        tp,
        ..Deployment::on(find_gpu(gpu).unwrap())
    }
}
