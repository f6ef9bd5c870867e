-- The rules the transfers must keep (isobench run --check-file).

-- name: no-negative-balance
SELECT id, balance FROM account WHERE balance < 0;

-- name: money-is-conserved
-- expect: 1000
-- during: true
SELECT sum(balance) FROM account;
