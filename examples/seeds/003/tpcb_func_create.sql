-- Seed 003's function: pgbench's TPC-B in one PL/pgSQL call that catches
-- serialization failures (SQLSTATE 40001) and returns normally, so the
-- client counts the call as a committed transaction although its work
-- was rolled back. Run once after pgbench's tables are loaded (init_sql).
CREATE FUNCTION tpcb(p_aid int, p_bid int, p_tid int, p_delta int)
RETURNS void LANGUAGE plpgsql STRICT AS $$
BEGIN
    UPDATE pgbench_accounts SET abalance = abalance + p_delta WHERE aid = p_aid;
    PERFORM abalance FROM pgbench_accounts WHERE aid = p_aid;
    UPDATE pgbench_tellers SET tbalance = tbalance + p_delta WHERE tid = p_tid;
    UPDATE pgbench_branches SET bbalance = bbalance + p_delta WHERE bid = p_bid;
    INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
    VALUES (p_tid, p_bid, p_aid, p_delta, CURRENT_TIMESTAMP);
EXCEPTION WHEN SQLSTATE '40001' THEN
    RETURN;
END
$$;
