-- Seed 003's script: one call of tpcb() per transaction.
\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
SELECT tpcb(:aid, :bid, :tid, :delta);
