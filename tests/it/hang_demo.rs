//! TEMPORARY (issue #48 item 6): a test that hangs, to see nextest's
//! slow-timeout kill and name it: `cargo nextest run --locked --run-ignored
//! only -E "test(a_test_that_hangs)"`. Remove it once that is seen.

#[test]
#[ignore = "hangs on purpose: the demonstration of the CI timeout"]
fn a_test_that_hangs() {
    // Waits on an event that never comes.
    let (_tx, rx) = std::sync::mpsc::channel::<()>();
    rx.recv().unwrap();
}
