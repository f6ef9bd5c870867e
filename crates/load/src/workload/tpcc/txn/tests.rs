//! The inputs clients draw, against clause 2's proportions.

use super::*;
use crate::workload::Workload;
use crate::workload::tpcc::tests::workload;

/// Draws `n` inputs of client `id` of a `scale`-warehouse workload.
fn draws(scale: u32, params: &[(&str, &str)], id: u32, n: usize) -> Vec<Input> {
    let w = workload(scale, params);
    let mut c = w.client(id, 42 + u64::from(id));
    (0..n).map(|_| c.next_input()).collect()
}

fn pct(part: usize, whole: usize) -> f64 {
    100.0 * part as f64 / whole as f64
}

#[test]
fn the_mix_is_the_specifications() {
    let inputs = draws(2, &[], 0, 100_000);
    let mut by_type = [0usize; 6];
    for i in &inputs {
        by_type[i.ty()] += 1;
    }
    let share: Vec<f64> = by_type.iter().map(|&n| pct(n, inputs.len())).collect();
    for (got, want) in share.iter().zip([45.0, 43.0, 4.0, 4.0, 4.0, 0.0]) {
        assert!((got - want).abs() < 0.5, "{share:?}");
    }
    let plus = draws(1, &[("variant", "tpcc++")], 0, 100_000);
    let cc = plus.iter().filter(|i| i.ty() == CREDIT_CHECK).count();
    let no = plus.iter().filter(|i| i.ty() == NEW_ORDER).count();
    assert!((3.6..4.4).contains(&pct(cc, plus.len())), "{cc}");
    assert!((40.5..41.5).contains(&pct(no, plus.len())), "{no}");
}

/// Clause 2.4.1: 5 to 15 lines, 1 % rolled back (last item unused), 1 %
/// of lines from another warehouse, items and quantities in range.
#[test]
fn new_orders_roll_back_one_in_a_hundred_and_one_line_in_a_hundred_is_remote() {
    let inputs = draws(3, &[("mix", "1/0/0/0/0")], 4, 50_000);
    let (mut rollbacks, mut lines, mut remote) = (0, 0, 0);
    for i in &inputs {
        let Input::NewOrder { w, d, c, lines: ls } = i else {
            panic!("only New-Orders: {i:?}")
        };
        assert_eq!(*w, 2, "client 4 of 3 warehouses is at warehouse 2");
        assert!((1..=10).contains(d) && (1..=3000).contains(c));
        assert!((5..=15).contains(&ls.len()));
        for (k, l) in ls.iter().enumerate() {
            assert_eq!(l.number, k as i32 + 1);
            assert!((1..=10).contains(&l.quantity));
            if l.item == UNUSED_ITEM {
                assert_eq!(k, ls.len() - 1, "only the last item is unused");
                rollbacks += 1;
            } else {
                assert!((1..=100_000).contains(&l.item));
            }
            if l.supply_w != *w {
                assert!((1..=3).contains(&l.supply_w));
                remote += 1;
            }
            lines += 1;
        }
    }
    assert!(
        (0.8..1.2).contains(&pct(rollbacks, inputs.len())),
        "{rollbacks}"
    );
    assert!(
        (0.9..1.1).contains(&pct(remote, lines)),
        "{remote} of {lines}"
    );
    // One warehouse: nothing is remote.
    let single = draws(1, &[("mix", "1/0/0/0/0")], 0, 2_000);
    assert!(single.iter().all(|i| match i {
        Input::NewOrder { lines, .. } => lines.iter().all(|l| l.supply_w == 1),
        _ => false,
    }));
}

/// Clauses 2.5.1 and 2.6.1: 15 % of payments by a customer of another
/// warehouse, 60 % of lookups by last name, amounts 1.00 to 5,000.00.
#[test]
fn payments_are_15_percent_remote_and_60_percent_by_name() {
    let inputs = draws(4, &[("mix", "0/1/1/0/0")], 1, 60_000);
    let (mut payments, mut remote, mut by_name, mut lookups) = (0, 0, 0, 0);
    for i in &inputs {
        let customer = match i {
            Input::Payment {
                w,
                d,
                c_w,
                c_d,
                customer,
                cents,
            } => {
                payments += 1;
                assert_eq!(*w, 2);
                assert!((100..=500_000).contains(cents));
                if c_w != w {
                    remote += 1;
                } else {
                    assert_eq!(c_d, d, "a home customer is in the paying district");
                }
                customer
            }
            Input::OrderStatus { w, customer, .. } => {
                assert_eq!(*w, 2);
                customer
            }
            other => panic!("{other:?}"),
        };
        lookups += 1;
        if let Customer::Last(name) = customer {
            by_name += 1;
            assert!((9..=15).contains(&name.len()), "{name}");
        }
    }
    assert!((14.0..16.0).contains(&pct(remote, payments)), "{remote}");
    assert!((59.0..61.0).contains(&pct(by_name, lookups)), "{by_name}");
}

/// Terminals: warehouses first, then districts; Stock-Level always in
/// the terminal's district (clause 2.8.1.1).
#[test]
fn each_client_is_a_terminal_of_one_warehouse_and_district() {
    let w = workload(2, &[("mix", "0/0/0/0/1")]);
    let mut seen = std::collections::BTreeSet::new();
    for id in 0..20 {
        let mut c = w.client(id, u64::from(id));
        let first = c.next_input();
        for _ in 0..50 {
            assert_eq!(c.next_input().ty(), STOCK_LEVEL);
        }
        let Input::StockLevel { w, d, threshold } = first else {
            panic!()
        };
        assert!((10..=20).contains(&threshold));
        assert!(seen.insert((w, d)), "two terminals on ({w}, {d})");
    }
    assert_eq!(
        seen.len(),
        20,
        "10 terminals per warehouse cover every district"
    );
}

#[test]
fn hotspot_and_determinism() {
    let a = draws(
        1,
        &[("customer-hotspot", "3"), ("mix", "1/0/0/0/0")],
        0,
        3_000,
    );
    assert!(
        a.iter()
            .all(|i| matches!(i, Input::NewOrder { c, .. } if (1..=3).contains(c)))
    );
    let again = draws(
        1,
        &[("customer-hotspot", "3"), ("mix", "1/0/0/0/0")],
        0,
        3_000,
    );
    let other = draws(
        1,
        &[("customer-hotspot", "3"), ("mix", "1/0/0/0/0")],
        1,
        3_000,
    );
    assert!(a == again, "same client, same seed: same inputs");
    assert!(a != other, "another client draws other inputs");
}

/// `think=spec`: each pause is the previous transaction's think time plus
/// this one's keying time; none by default.
#[test]
fn think_times_only_with_think_spec() {
    let w = workload(1, &[]);
    let mut c = w.client(0, 1);
    let i = c.next_input();
    assert_eq!(c.pause_before(&i), Duration::ZERO);
    let w = workload(1, &[("think", "spec"), ("mix", "1/0/0/0/0")]);
    let mut c = w.client(0, 1);
    let i = c.next_input();
    assert_eq!(
        c.pause_before(&i),
        Duration::from_secs(18),
        "keying only, first"
    );
    let mut total = 0.0;
    for _ in 0..2_000 {
        let i = c.next_input();
        total += c.pause_before(&i).as_secs_f64() - 18.0;
    }
    // Think times of New-Order: mean 12 s.
    assert!(
        (11.0..13.0).contains(&(total / 2_000.0)),
        "{}",
        total / 2_000.0
    );
}
