-- Move 1 to 10 from one account to another, when the source covers it:
-- read the balance, decide, then write (as an application would).
\set src random(1, 100)
\set dst random(1, 100)
\set amount random(1, 10)
BEGIN;
SELECT balance FROM account WHERE id = :src \gset
\if :balance >= :amount
UPDATE account SET balance = balance - :amount WHERE id = :src;
UPDATE account SET balance = balance + :amount WHERE id = :dst;
\endif
END;
