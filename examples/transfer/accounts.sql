-- 100 accounts of 10 each: 1,000 in all.
CREATE TABLE account (id int PRIMARY KEY, balance int NOT NULL);
INSERT INTO account SELECT g, 10 FROM generate_series(1, 100) g;
