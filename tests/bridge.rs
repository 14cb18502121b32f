//! The IR-to-runtime bridge on the bundled examples: every pool member of every example
//! becomes a configuration the runtime accepts, with family joins resolved to the
//! members K1 names.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use poolc::bridge::pool_config;
use poolc::ir::PoolId;
use poolrt::{Input, Pool, PoolRef, Query, QueryKind, QueuePolicy, StageRef, Target};

fn compiled(name: &str) -> poolc::Compiled {
    let path = format!("{}/examples/{name}.pool", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(&path).expect("example exists");
    poolc::compile(&source, &poolc::Options::default()).expect("example compiles")
}

#[test]
fn every_member_of_every_example_is_accepted_by_the_runtime() {
    for name in ["vllm", "ascend", "tiered", "replicas"] {
        let c = compiled(name);
        let program = c.program();
        for (i, pool) in program.pools.iter().enumerate() {
            let id = PoolId(i as u32);
            for member in 0..pool.count {
                let config = pool_config(program, id, member, c.pool(id))
                    .unwrap_or_else(|e| panic!("{name}/{}[{member}]: {e}", pool.name));
                assert_eq!(config.me, PoolRef { pool: id.0, member });
                if let Err(e) = Pool::new(config) {
                    panic!("{name}/{}[{member}] refused by the runtime: {e}", pool.name);
                }
            }
        }
    }
}

#[test]
fn k1_joins_resolve_to_concrete_members() {
    // replicas.pool: kv[4] reads free(kv) (its own member) and spills to the one host
    // over the one pcie link.
    let c = compiled("replicas");
    let program = c.program();
    let kv = program.find_pool("kv").expect("kv");
    let host = program.find_pool("host").expect("host");
    let pcie = program.find_stage("pcie").expect("pcie");
    let config = pool_config(program, kv, 2, c.pool(kv)).expect("bridged");
    let QueuePolicy::By { layout, .. } = &config.queue else {
        panic!("kv has queue keys")
    };
    assert_eq!(
        layout.ctx,
        vec![Input::Query(Query {
            kind: QueryKind::Free,
            target: Target::Pool(PoolRef {
                pool: kv.0,
                member: 2
            }),
        })]
    );
    let spill = config.spill.expect("kv spills");
    assert_eq!(
        spill.tier,
        PoolRef {
            pool: host.0,
            member: 0
        }
    );
    assert_eq!(
        spill.link,
        StageRef {
            stage: pcie.0,
            member: 0
        }
    );
    // The entry layout's `units` is the units a spill writes.
    assert_eq!(spill.layout.ctx, vec![Input::SpillUnits]);
}
