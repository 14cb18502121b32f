//! The identity index's tests: against a plain ordered map on random operations,
//! and its layout (groups, lone keys, strays) on hand-made cases.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

fn key(run: u64, offset: u64) -> BlockKey {
    BlockKey {
        run: RunId(run),
        offset,
    }
}

/// The index against a plain ordered map, on random inserts and removals of keys
/// from a few runs at mixed alignments and far offsets (dense, stray, groups
/// emptied and reused), for power-of-two and other block sizes.
fn agrees_with_a_map(block: u64, ops: Vec<(bool, u64, u64, u32)>) -> Result<(), TestCaseError> {
    let mut index = Index::new(block);
    let mut model: BTreeMap<BlockKey, CopyRef> = BTreeMap::new();
    for (insert, run, offset, b) in ops {
        let k = key(run, offset);
        let b = CopyRef(b);
        if insert {
            let got = index.insert_or_first(k, b);
            let want = model.get(&k).copied();
            prop_assert_eq!(got, want);
            model.entry(k).or_insert(b);
        } else if let Some(&first) = model.get(&k) {
            // Half the removals hand the key to a later copy instead.
            let next = (first.0 % 2 == 0).then_some(CopyRef(first.0 + 1));
            // A copy that is not the first changes nothing.
            prop_assert_eq!(index.release(k, CopyRef(first.0 ^ 1), None), Some(first));
            prop_assert_eq!(index.release(k, first, next), None);
            match next {
                Some(n) => {
                    model.insert(k, n);
                }
                None => {
                    model.remove(&k);
                }
            }
        }
        prop_assert_eq!(index.get(&k), model.get(&k).copied());
        prop_assert_eq!(index.len(), model.len());
        index.check().map_err(TestCaseError::fail)?;
    }
    let mut listed: Vec<_> = index.iter().collect();
    listed.sort();
    let want: Vec<_> = model.into_iter().collect();
    prop_assert_eq!(listed, want);
    Ok(())
}

fn op() -> impl Strategy<Value = (bool, u64, u64, u32)> {
    (
        any::<bool>(),
        0u64..4,
        prop_oneof![0u64..200, 0u64..20_000, Just(u64::MAX), Just(u64::MAX - 1)],
        0u32..1000,
    )
}

proptest! {
    #[test]
    fn index_r7_first_copy_agrees_with_a_map_block_16(ops in prop::collection::vec(op(), 1..300)) {
        agrees_with_a_map(16, ops)?;
    }

    #[test]
    fn index_r7_first_copy_agrees_with_a_map_block_3(ops in prop::collection::vec(op(), 1..300)) {
        agrees_with_a_map(3, ops)?;
    }

    /// The largest blocks with lone keys: a group is one block of 2^31 units.
    #[test]
    fn index_r7_first_copy_agrees_with_a_map_block_2_31(ops in prop::collection::vec(op(), 1..300)) {
        agrees_with_a_map(1 << 31, ops)?;
    }

    /// Blocks so large that two offsets of a group may share the low bits a lone
    /// key's word keeps (`Lones::Never`).
    #[test]
    fn index_r7_first_copy_agrees_with_a_map_block_3_times_2_31(ops in prop::collection::vec(op(), 1..300)) {
        agrees_with_a_map(3 << 31, ops)?;
    }
}

/// The run operations against a plain ordered map: runs of keys registered as one
/// range (`insert_run`, a holder's new blocks; keys with a present copy handed
/// back in order), and tails of the stretches
/// they made new removed together (`remove_only_copies`, R10), at mixed
/// alignments, across group boundaries and beside strays.
fn runs_agree_with_a_map(block: u64, ops: Vec<(bool, u64, u64, u32)>) -> Result<(), TestCaseError> {
    let mut index = Index::new(block);
    let mut model: BTreeMap<BlockKey, CopyRef> = BTreeMap::new();
    // (run, first offset, count): consecutive keys filed by one run of inserts.
    let mut stretches: Vec<(u64, u64, u32)> = Vec::new();
    let mut fresh = 0u32;
    for (insert, run, offset, n) in ops {
        let n = n % 40 + 1;
        if insert || stretches.is_empty() {
            let offsets: Vec<u64> = (0..u64::from(n))
                .map_while(|j| offset.checked_add(j * block))
                .collect();
            let blocks: Vec<BlockId> = offsets
                .iter()
                .map(|_| {
                    fresh += 1;
                    BlockId(fresh - 1)
                })
                .collect();
            let mut later = Vec::new();
            index.insert_run(key(run, offset), &blocks, |k, first, c| {
                later.push((k, first, c))
            });
            let mut want_later = Vec::new();
            let mut open = false;
            for (&o, &b) in offsets.iter().zip(&blocks) {
                let k = key(run, o);
                let v = CopyRef(b.0);
                match model.entry(k) {
                    std::collections::btree_map::Entry::Vacant(e) => {
                        e.insert(v);
                        match stretches.last_mut() {
                            Some((r, first, count))
                                if open && *r == run && *first + u64::from(*count) * block == o =>
                            {
                                *count += 1;
                            }
                            _ => stretches.push((run, o, 1)),
                        }
                        open = true;
                    }
                    std::collections::btree_map::Entry::Occupied(e) => {
                        want_later.push((k, *e.get(), v));
                        open = false;
                    }
                }
            }
            prop_assert_eq!(later, want_later);
        } else {
            let i = offset as usize % stretches.len();
            let (r, first, count) = stretches[i];
            let take = n.min(count);
            let mut removed = Vec::new();
            index.remove_only_copies(RunId(r), first + u64::from(count - 1) * block, take, |c| {
                removed.push(c)
            });
            let mut want = Vec::new();
            for j in (count - take..count).rev() {
                want.extend(model.remove(&key(r, first + u64::from(j) * block)));
            }
            prop_assert_eq!(removed, want);
            if take == count {
                stretches.remove(i);
            } else {
                stretches[i].2 -= take;
            }
        }
        prop_assert_eq!(index.len(), model.len());
        index.check().map_err(TestCaseError::fail)?;
    }
    for (k, v) in &model {
        prop_assert_eq!(index.get(k), Some(*v));
    }
    Ok(())
}

fn run_op() -> impl Strategy<Value = (bool, u64, u64, u32)> {
    (
        any::<bool>(),
        0u64..3,
        prop_oneof![0u64..200, 0u64..2_000, Just(u64::MAX - 40)],
        any::<u32>(),
    )
}

proptest! {
    #[test]
    fn index_r10_runs_registered_and_evicted_together_agree_with_a_map_block_16(ops in prop::collection::vec(run_op(), 1..60)) {
        runs_agree_with_a_map(16, ops)?;
    }

    #[test]
    fn index_r10_runs_registered_and_evicted_together_agree_with_a_map_block_3(ops in prop::collection::vec(run_op(), 1..60)) {
        runs_agree_with_a_map(3, ops)?;
    }
}

#[test]
fn index_keeps_one_group_for_a_runs_32_aligned_blocks_and_strays_out_of_step() {
    let mut index = Index::new(16);
    for k in 0..32u64 {
        assert_eq!(
            index.insert_or_first(key(7, 15 + 16 * k), CopyRef(k as u32)),
            None
        );
    }
    // A key out of step with the run's alignment, and one in another group.
    assert_eq!(index.insert_or_first(key(7, 3), CopyRef(100)), None);
    assert_eq!(
        index.insert_or_first(key(7, 15 + 16 * 100_000), CopyRef(101)),
        None
    );
    // The far key is alone in its group: no slots for it.
    assert_eq!(index.groups_of.len(), 2);
    assert_eq!(index.slots.len(), 32);
    let Some(Held::Group(group)) = index.held((RunId(7), 0)) else {
        panic!("run 7's first group has slots");
    };
    let g = &index.groups[group as usize];
    assert_eq!((g.dense, g.stray), (32, 1));
    assert_eq!(index.get(&key(7, 3)), Some(CopyRef(100)));
    assert_eq!(index.get(&key(7, 15 + 16 * 100_000)), Some(CopyRef(101)));
    assert_eq!(index.get(&key(7, 15 + 16 * 32)), None);
    index.check().unwrap();
    // Emptied groups are freed and their slots reused.
    for k in 0..32u64 {
        index.release(
            key(7, 15 + 16 * k),
            index.get(&key(7, 15 + 16 * k)).unwrap(),
            None,
        );
    }
    index.release(key(7, 3), index.get(&key(7, 3)).unwrap(), None);
    assert_eq!(index.groups_of.len(), 1);
    assert_eq!(index.free.len(), 1);
    // A new run's second key opens a group: the freed one.
    assert_eq!(index.insert_or_first(key(8, 0), CopyRef(5)), None);
    assert_eq!(index.insert_or_first(key(8, 16), CopyRef(6)), None);
    assert_eq!(index.groups.len(), 1);
    assert!(index.free.is_empty());
    index.check().unwrap();
}

#[test]
fn index_keeps_a_lone_key_out_of_the_groups_until_a_second_comes() {
    let mut index = Index::new(16);
    assert_eq!(index.insert_or_first(key(4, 15), CopyRef(1)), None);
    assert!(index.groups.is_empty() && index.slots.is_empty());
    assert_eq!(index.get(&key(4, 15)), Some(CopyRef(1)));
    assert_eq!(index.get(&key(4, 31)), None);
    assert_eq!(
        index.insert_or_first(key(4, 15), CopyRef(2)),
        Some(CopyRef(1))
    );
    // A later copy takes the first's place, still lone.
    assert_eq!(
        index.release(key(4, 15), CopyRef(2), None),
        Some(CopyRef(1))
    );
    assert_eq!(
        index.release(key(4, 15), CopyRef(1), Some(CopyRef(2))),
        None
    );
    assert_eq!(index.get(&key(4, 15)), Some(CopyRef(2)));
    index.check().unwrap();
    // A second key of the group, out of step: both move into a group numbered by
    // the lone key, the newcomer stray.
    assert_eq!(index.insert_or_first(key(4, 3), CopyRef(7)), None);
    assert_eq!(index.groups.len(), 1);
    let g = &index.groups[0];
    assert_eq!((g.phase, g.dense, g.stray), (15, 1, 1));
    assert_eq!(index.get(&key(4, 15)), Some(CopyRef(2)));
    assert_eq!(index.get(&key(4, 3)), Some(CopyRef(7)));
    assert_eq!(index.len(), 2);
    index.check().unwrap();
    // The last copy of a lone key leaves: nothing is kept of it.
    assert_eq!(index.insert_or_first(key(5, 0), CopyRef(9)), None);
    assert_eq!(index.release(key(5, 0), CopyRef(9), None), None);
    assert_eq!(index.get(&key(5, 0)), None);
    assert_eq!(index.len(), 2);
    index.check().unwrap();
}

#[test]
fn index_keeps_lone_keys_only_where_a_group_spans_at_most_2_31_units() {
    // Blocks of 2^31 units: a group is one block, and a lone key's word keeps the
    // low 31 bits of its offset, which tell apart every offset of the group.
    let block = 1 << 31;
    let mut index = Index::new(block);
    let (a, b) = (key(8, 5 * block + block - 1), key(8, 5 * block + 3));
    assert_eq!(index.insert_or_first(a, CopyRef(1)), None);
    assert_eq!(
        index.held((RunId(8), 5)),
        Some(Held::Lone {
            offset: a.offset,
            first: CopyRef(1)
        })
    );
    assert_eq!((index.get(&a), index.get(&b)), (Some(CopyRef(1)), None));
    index.check().unwrap();
    // Blocks of 3 * 2^31 units: two offsets of one group may share their low 31
    // bits, so every key has a group.
    let block = 3 << 31;
    let mut index = Index::new(block);
    let (a, b) = (key(8, 5 * block + 7), key(8, 5 * block + (1 << 31) + 7));
    assert_eq!(index.insert_or_first(a, CopyRef(1)), None);
    assert_eq!(index.held((RunId(8), 5)), Some(Held::Group(0)));
    assert_eq!((index.get(&a), index.get(&b)), (Some(CopyRef(1)), None));
    assert_eq!(index.insert_or_first(b, CopyRef(2)), None);
    assert_eq!(index.insert_or_first(a, CopyRef(3)), Some(CopyRef(1)));
    assert_eq!(
        (index.get(&a), index.get(&b)),
        (Some(CopyRef(1)), Some(CopyRef(2)))
    );
    index.check().unwrap();
    assert_eq!(index.release(a, CopyRef(1), None), None);
    assert_eq!(index.release(b, CopyRef(2), None), None);
    assert_eq!((index.get(&a), index.len()), (None, 0));
    index.check().unwrap();
}

#[test]
fn index_group_width_spans_512_units_within_1_to_32_blocks() {
    for (block, width) in [
        (1, 32),
        (16, 32),
        (32, 16),
        (64, 8),
        (3, 32),
        (100, 4),
        (512, 1),
        (4096, 1),
    ] {
        let mut index = Index::new(block);
        // Two keys of one group (a lone key has no slots): block 1 and 2, or,
        // for wider blocks, one in step and one out.
        index.insert_or_first(key(1, 2 * block - 1), CopyRef(0));
        index.insert_or_first(key(1, (2 * block).saturating_sub(2)), CopyRef(1));
        assert_eq!(index.slots.len(), width, "block {block}");
    }
}

#[test]
fn index_rephases_an_emptied_group_and_still_finds_its_strays() {
    let mut index = Index::new(16);
    // Dense at phase 15, a stray at phase 3 in the same group.
    index.insert_or_first(key(7, 15), CopyRef(1));
    index.insert_or_first(key(7, 31), CopyRef(2));
    index.insert_or_first(key(7, 3), CopyRef(3));
    index.release(key(7, 15), index.get(&key(7, 15)).unwrap(), None);
    index.release(key(7, 31), index.get(&key(7, 31)).unwrap(), None);
    // The group now numbers its slots by phase 3; the stray stays findable, in
    // one place only.
    assert_eq!(index.insert_or_first(key(7, 19), CopyRef(4)), None);
    assert_eq!(index.get(&key(7, 3)), Some(CopyRef(3)));
    assert_eq!(
        index.insert_or_first(key(7, 3), CopyRef(9)),
        Some(CopyRef(3))
    );
    assert_eq!(index.get(&key(7, 19)), Some(CopyRef(4)));
    assert_eq!(index.get(&key(7, 15)), None);
    index.check().unwrap();
    index.release(key(7, 3), index.get(&key(7, 3)).unwrap(), None);
    assert_eq!(index.get(&key(7, 3)), None);
    assert_eq!(index.len(), 1);
    index.check().unwrap();
}
